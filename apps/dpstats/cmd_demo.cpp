// dpstats demo — the main job on bundled (generated) data: a readable report of what the
// library releases and what each release costs in privacy.
#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "cli.hpp"
#include "demo.hpp"
#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mechanisms/noise_release.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/calibration.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats::cli {

std::string privacy_text(const PrivacyGuarantee& p) {
  std::string s = p.delta > 0 ? fmt::format("(eps={:g}, delta={:g})-DP", p.epsilon, p.delta)
                              : fmt::format("eps={:g} pure DP", p.epsilon);
  return s + (p.certified ? ", certified" : ", NOT certified");
}

namespace {

void run_demo() {
  using clock = std::chrono::steady_clock;
  constexpr std::int64_t n = 200000, d = 10;
  constexpr double alpha = 0.05, shift = 1.5;
  SeededRng data_rng(2026);
  const RowMatrix X = shifted_cluster(n, d, alpha, shift, data_rng);
  SecureRng rng;  // every release below draws its noise from the OS CSPRNG

  std::cout << fmt::format("dpstats {} demo\n\n", DPSTATS_VERSION);
  std::cout << fmt::format(
      "Data: n = {} rows, d = {} columns, generated with seed 2026. The clean rows are N(0, I);\n"
      "{:.0f}% of the rows are an oblivious corruption N({}·1, I) (the PRIME paper's attack).\n"
      "The true mean is 0, so a method's error is the l2 norm of its estimate.\n\n",
      n, d, alpha * 100, shift);

  const Vector empirical = X.colwise().mean();
  std::cout << "1. Private means (noise from the OS CSPRNG, exact lattice samplers)\n";
  std::cout << fmt::format("   {:<34} {:<36} {:>9} {:>9}\n", "method", "privacy", "l2 error",
                           "time");
  std::cout << fmt::format("   {:<34} {:<36} {:>9.4f} {:>9}\n", "empirical mean", "none (not private)",
                           empirical.norm(), "");
  auto row = [&](const std::string& name, auto&& run) {
    const auto t0 = clock::now();
    const Release<Vector> r = run();
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    const std::string err =
        r.status == Status::ok ? fmt::format("{:.4f}", r.estimate.norm()) : "abstained";
    std::cout << fmt::format("   {:<34} {:<36} {:>9} {:>7.1f}ms\n", name, privacy_text(r.privacy),
                             err, ms);
  };
  row("bounded mean, bounds [-4, 4]", [&] {
    return bounded_mean(X, {.privacy = {1, 0}, .bounds = std::vector<double>{-4, 4}, .clip_check_share = 0}, rng);
  });
  row("bounded mean, bounds [-4, 4]", [&] {
    return bounded_mean(X, {.privacy = {1, 1e-6}, .bounds = std::vector<double>{-4, 4}, .clip_check_share = 0}, rng);
  });
  row("DP Mean (private range + clip)", [&] {
    return dp_mean(X, {.privacy = {1, 1e-6}, .scale = std::vector<double>{1.0}, .clip_check_share = 0}, rng);
  });
  row("PRIME, alpha = 0.05 (robust)", [&] {
    PrimeOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = 1;
    o.privacy.delta = 1e-6;
    o.alpha = alpha;
    return prime(X, o, rng);
  });
  std::cout << fmt::format(
      "   The corruption pulls every non-robust mean by about alpha·shift·sqrt(d) = {:.3f};\n"
      "   PRIME filters the corrupted rows privately and stays near the clean mean.\n\n",
      alpha * shift * std::sqrt(static_cast<double>(d)));

  std::cout << "2. Noise on a single count (sensitivity 1)\n";
  const Vector count = Vector::Constant(1, 1234);
  const auto lap = laplace_release(count, 1, 0.5, rng);
  const auto gau = gaussian_release(count, 1, 0.5, 1e-6, rng);
  std::cout << fmt::format("   true 1234 -> {:.3f} with Laplace, scale {:.4f}, {}\n", lap.estimate[0],
                           lap.diagnostics["scale"].get<double>(), privacy_text(lap.privacy));
  std::cout << fmt::format("   true 1234 -> {:.3f} with Gaussian, sigma {:.4f}, {}\n\n",
                           gau.estimate[0], gau.diagnostics["sigma"].get<double>(),
                           privacy_text(gau.privacy));

  std::cout << "3. Privacy calculator\n";
  std::cout << fmt::format(
      "   analytic Gaussian sigma at (eps=1, delta=1e-5), sensitivity 1: {:.6f}\n"
      "   (the classic sqrt(2 ln(1.25/delta))/eps = {:.4f} is proven only for eps < 1)\n",
      analytic_gaussian_sigma(1, 1, 1e-5), std::sqrt(2 * std::log(1.25 / 1e-5)));
  std::cout << fmt::format("   rho = 0.5 zCDP is (eps={:.4f}, delta=1e-5)-DP (tight conversion)\n",
                           zcdp_to_epsilon(0.5, 1e-5));
  const auto best = best_composition(0.1, 0, 100, 1e-6);
  std::cout << fmt::format("   100 releases at eps=0.1 compose to eps={:.3f} at delta={:g} "
                           "(basic composition: 10)\n\n",
                           best.epsilon, best.delta);

  std::cout << "4. A budget refuses over-spending\n";
  Budget budget(PrivacyLoss::approximate(1.0, 1e-6), Accountant::basic);
  budget.spend(LaplaceMechanism(1, 0.6).ledger_entry("first count"));
  std::cout << "   spent eps=0.6 of (eps=1, delta=1e-6)\n";
  try {
    budget.spend(LaplaceMechanism(1, 0.5).ledger_entry("second count"));
  } catch (const BudgetExceeded& e) {
    std::cout << "   a further eps=0.5 is refused: " << e.what() << "\n\n";
  }
  demo_papers(rng);
  std::cout << "Every output of the tool states its privacy; see `dpstats --help` and docs/guide.md.\n";
}

}  // namespace

void add_demo_command(CLI::App& app) {
  app.add_subcommand("demo", "Run the demo on generated data and print a readable report")
      ->callback(run_demo);
}

}  // namespace dpstats::cli
