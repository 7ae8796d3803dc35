// dpstats demo, part 2: one small worked example per paper beyond the robust mean (the geometric
// median, continual moments, user-level and heavy-tailed optimisation, private training).
#include <fmt/format.h>

#include <chrono>
#include <utility>
#include <iostream>

#include "demo.hpp"
#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/weiszfeld.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/synthetic/heavy_tailed_data.hpp"
#include "dpstats/synthetic/synthetic_users.hpp"
#include "dpstats/user_level/user_level.hpp"

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
  o.privacy = {1, 1e-6};
  o.domain_radius = R;
  const auto gm = geometric_median(X, o, rng);
  line("private geometric median", privacy_text(gm.privacy), gm.estimate, elapsed_ms(t0));
  t0 = std::chrono::steady_clock::now();
  const auto bm = bounded_mean(X, {.privacy = {1, 1e-6}, .bounds = std::vector<double>{-R, R}, .clip_check_share = 0}, rng);
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
  const std::pair<Method, const char*> methods[] = {
      {Method::pp, "PP (square the noisy vectors)"},
      {Method::pp_debiased, "PP, debiased"},
      {Method::jme, "JME (joint moment estimation)"}};
  for (const auto& [method, name] : methods) {
    const auto t0 = std::chrono::steady_clock::now();
    MomentsOptions o;
    o.steps = T;
    o.dim = d;
    o.method = method;
    o.workload = "average";
    o.privacy = {.epsilon = 1, .delta = 1e-6};
    o.clip = 1;  // the demo's rows have norm <= 1

    o.clip_check_share = 0;
    const auto r = estimate_moments(X, make_config(o), rng);
    const RowMatrix last =
        Eigen::Map<const RowMatrix>(r.estimate.second.row(T - 1).data(), d, d);
    std::cout << fmt::format("   {:<34} {:<36} {:>9.3g} {:>7.1f}ms\n", name,
                             privacy_text(r.privacy), (last - truth).norm(), elapsed_ms(t0));
  }
  std::cout << "   JME adds its noise to x x^T directly instead of squaring noisy vectors.\n\n";
}

void user_level_section(Rng& rng) {
  using namespace dpstats::optimize;
  UserTask task;
  task.n = 2000;
  task.m = 20;
  task.d = 10;
  SeededRng data_rng(9);
  const Vector w_star = make_w_star(task, data_rng);
  const UserDataset data = make_user_task(task, w_star, data_rng);
  std::cout << fmt::format(
      "7. User-level private logistic regression: {} users with {} rows each, d = {}; the whole\n"
      "   of one user's data is protected at (eps=1, delta=1e-6). Error: ||w - w*|| (||w*|| = {}).\n",
      task.n, task.m, task.d, task.w_norm);
  for (const auto method : {UserLevelMethod::dp_gd_user, UserLevelMethod::dp_sgd_group,
                            UserLevelMethod::non_private}) {
    UserLevelOptions o;
    o.privacy = {1, 1e-6};
    o.method = method;
    o.domain_radius = 2 * task.w_norm;
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = fit_user_level(data, o, rng);
    const std::string name = method == UserLevelMethod::dp_gd_user ? "user-level DP-GD (default)"
                             : method == UserLevelMethod::dp_sgd_group
                                 ? "item-level DP-SGD + group privacy"
                                 : "SGD (not private)";
    const std::string privacy =
        method == UserLevelMethod::non_private ? "none (not private)" : privacy_text(r.privacy);
    std::cout << fmt::format("   {:<34} {:<36} {:>9.3f} {:>7.1f}ms\n", name, privacy,
                             (r.estimate - w_star).norm(), elapsed_ms(t0));
  }
  std::cout << "\n";
}

void heavy_tailed_section(Rng& rng) {
  using namespace dpstats::optimize;
  HeavyTailedTask task;  // L1 regression, Student-t(5) features and noise, d = 5, W = B(0, 2)
  SeededRng data_rng(10);
  HeavyTailedSample s = generate_heavy_tailed(task, 5000, data_rng);
  s.X.row(0).setConstant(1e6);  // one enormous record
  s.y[0] = -1e7;
  const HeavyTailedRisk risk(task, 200000, 11);
  std::cout << fmt::format(
      "8. Pure-DP L1 regression with heavy-tailed data (Student-t features and noise, n = {},\n"
      "   d = {}, one record x = 10^6·1, y = -10^7): only a 4th moment of the gradients is\n"
      "   bounded. Error: excess population risk.\n", s.X.rows(), task.d);
  for (const auto method : {HeavyTailedMethod::lipschitz_extension, HeavyTailedMethod::non_private}) {
    HeavyTailedOptions o;
    o.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
    o.privacy.epsilon = 1;
    o.method = method;
    o.domain_radius = task.radius;
    set_moment(o, heavy_tailed_moment(task, 4));
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = fit_heavy_tailed(s.X, s.y, o, rng);
    const std::string privacy =
        method == HeavyTailedMethod::non_private ? "none (not private)" : privacy_text(r.privacy);
    std::cout << fmt::format("   {:<34} {:<36} {:>9.2e} {:>7.1f}ms\n",
                             method == HeavyTailedMethod::non_private ? "ERM (not private)"
                                                                       : "recommended (pure DP)",
                             privacy, risk.excess(r.estimate), elapsed_ms(t0));
  }
  std::cout << "   The private fit clips each record's influence (a Lipschitz extension of the\n"
               "   loss), so the enormous record cannot drag it away.\n\n";
}

}  // namespace

void demo_papers(Rng& rng) {
  median_section(rng);
  moments_section(rng);
  user_level_section(rng);
  heavy_tailed_section(rng);
}

}  // namespace dpstats::cli
