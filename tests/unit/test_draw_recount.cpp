// One object charges and draws (issue 28 item 2): for every capability, the noise actually drawn
// (DrawLog: every mechanism reports each release it makes) is recounted against the release's
// ledger -- for each (mechanism, noise scale), the draws equal the counts of the entries that ran
// (a composite's blocks included), and an entry still reserved (its stage never ran) drew
// nothing. A ledger entry written apart from the mechanism that draws (another scale, another
// count, a kind that did not run) fails here.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/mean/exp_time_mean.hpp"
#include "dpstats/mean/tukey_median.hpp"
#include "dpstats/mechanisms/draw_log.hpp"
#include "dpstats/mechanisms/noise_release.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/scale/bounds.hpp"
#include "dpstats/stats/stats.hpp"
#include "dpstats/synthetic/gaussian_cluster.hpp"
#include "dpstats/synthetic/heavy_tailed_data.hpp"
#include "dpstats/synthetic/synthetic_users.hpp"
#include "dpstats/training/train_classifier.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "guarantee.hpp"

namespace dpstats {
namespace {

using namespace moments;
using namespace optimize;
using Key = std::pair<std::string, double>;  // (mechanism kind, noise scale)

// The noise a mechanism's draws report: the quantile selections are exponential mechanisms.
std::string kind_of(const std::string& mechanism) {
  if (mechanism == "grid_quantile" || mechanism == "private_quantile") return "exponential";
  return mechanism;
}

// The entries that ran, by (kind, noise scale): a composite counts its blocks' entries (times its
// own count).
void add_ran(const Ledger& ledger, std::map<Key, double>& out, double times = 1) {
  for (const auto& e : ledger) {
    if (!e.blocks.empty()) {
      for (const auto& b : e.blocks) add_ran(b, out, times * e.count);
    } else if (!e.reserved) {
      out[{kind_of(e.mechanism), e.noise_scale}] += times * e.count;
    }
  }
}

std::map<Key, double> drawn(const DrawLog& log) {
  std::map<Key, double> out;
  for (const auto& c : log.counts()) out[{c.mechanism, c.noise_scale}] += c.draws;
  return out;
}

std::string show(const std::map<Key, double>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += fmt::format("  {} scale {} : {}\n", k.first, k.second, v);
  return s;
}

// `at_most`: a capability whose run may stop before its planned maximum (a gate, an
// AboveThreshold search): every draw is planned, and no more than planned.
// Releases recounted in full (status ok) by the current test.
int g_ok = 0;

// An abstaining release stopped before some of its planned mechanisms: at most, then.
template <class T>
void expect_recount(const Release<T>& r, const DrawLog& log, const std::string& name,
                    bool at_most = false) {
  testing::expect_guarantee_from_ledger(r);
  at_most = at_most || r.status == Status::abstained;
  if (r.status == Status::ok) ++g_ok;
  const std::string what = name + " (" + to_string(r.status) + ")\n" + ledger_json(r.ledger).dump(1);
  std::map<Key, double> planned;
  add_ran(r.ledger, planned);
  const std::map<Key, double> got = drawn(log);
  for (const auto& [k, n] : got) {
    ASSERT_TRUE(planned.count(k)) << what << ": a draw with no ledger entry: " << k.first
                                  << " scale " << k.second << "\nledger:\n" << show(planned)
                                  << "draws:\n" << show(got);
    if (at_most) EXPECT_LE(n, planned.at(k) + 1e-9) << what << ": " << k.first;
    else EXPECT_NEAR(n, planned.at(k), 1e-9) << what << ": " << k.first << " scale " << k.second;
  }
  if (!at_most)
    for (const auto& [k, n] : planned)
      EXPECT_TRUE(got.count(k)) << what << ": a ledger entry that drew nothing: " << k.first
                                << " scale " << k.second << "\ndraws:\n" << show(got);
}

// The heavy-tailed fits' table: 2000 records, d = 2, Student-t with 3 degrees of freedom.
HeavyTailedSample heavy_tailed_sample() {
  HeavyTailedTask t;
  t.d = 2;
  t.nu = 3;
  SeededRng data(16);
  return generate_heavy_tailed(t, 2000, data);
}

RowMatrix table(std::int64_t n, std::int64_t d, std::uint64_t seed, double scale = 3) {
  SeededRng rng(seed);
  RowMatrix X(n, d);
  for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = scale * (rng.uniform01() - 0.3);
  return X;
}

TEST(DrawRecount, NoiseReleases) {
  g_ok = 0;
  DrawLog log;
  SeededRng rng(1);
  const Vector v = Vector::Ones(3);
  expect_recount(laplace_release(v, 1, 0.5, rng), log, "laplace");
  log.clear();
  expect_recount(gaussian_release(v, 1, 0.5, 1e-6, rng), log, "gaussian");
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, Statistics) {
  g_ok = 0;
  const RowMatrix X = table(400, 2, 2);
  for (double delta : {0.0, 1e-6}) {
    for (bool bounds : {false, true}) {
      stats::StatOptions o;
      o.privacy = {0.3, delta};
      if (bounds) o.bounds = {{-1, 3}};
      o.quantiles = {0.25, 0.5};
      for (auto s : {stats::Statistic::count, stats::Statistic::sum, stats::Statistic::mean,
                     stats::Statistic::variance, stats::Statistic::std,
                     stats::Statistic::quantiles}) {
        if (s == stats::Statistic::count && bounds) continue;
        DrawLog log;
        SeededRng rng(3);
        expect_recount(stats::numeric(s, X, o, rng), log,
                       fmt::format("stat {} delta {} bounds {}", static_cast<int>(s), delta, bounds));
      }
    }
  }
  std::vector<std::string> column = {"a", "b", "a", "c", "a", "b"};
  for (int i = 0; i < 200; ++i) column.push_back(i % 3 ? "a" : "b");
  stats::StatOptions o;
  o.privacy = {0.5, 1e-6};
  DrawLog log;
  SeededRng rng(4);
  expect_recount(stats::histogram(column, o, rng), log, "histogram, selected categories");
  log.clear();
  o.categories = {"a", "b", "c"};
  expect_recount(stats::histogram(column, o, rng), log, "histogram, public categories");
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, Bounds) {
  g_ok = 0;
  const RowMatrix X = table(4000, 2, 5);  // enough rows for the scale layer's rule at epsilon 1
  for (double delta : {0.0, 1e-6}) {
    BoundsOptions o;
    o.privacy = {1, delta};
    o.norm_quantile = 0.9;
    DrawLog log;
    SeededRng rng(6);
    expect_recount(private_bounds(X, o, rng), log, fmt::format("bounds delta {}", delta));
  }
  // --coverage: the clipping bounds too (with and without the norm quantile).
  for (double delta : {0.0, 1e-6}) {
    for (bool norm : {false, true}) {
      BoundsOptions o;
      o.privacy = {1, delta};
      o.coverage = 0.05;
      if (norm) o.norm_quantile = 0.9;
      DrawLog log;
      SeededRng rng(6);
      expect_recount(private_bounds(X, o, rng), log,
                     fmt::format("bounds coverage delta {} norm {}", delta, norm));
    }
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, MeanFamily) {
  g_ok = 0;
  SeededRng data(7);
  const RowMatrix X = gaussian_cluster(5, 3000, 2, 0.5, 1.0, data);
  for (const char* method : {"bounded", "dp-mean", "prime", "prime-ht", "filter", "prime-boosted"}) {
    for (bool scale : {false, true}) {
      MeanRequest r;
      r.method = method;
      r.privacy = {1, 1e-6};
      if (scale) r.scale = std::vector<double>{1.0};
      if (std::string(method) == "bounded" && scale) r.bounds = std::vector<double>{-8, 12};
      if (std::string(method) == "bounded") r.scale.reset();
      if (std::string(method) != "bounded" && std::string(method) != "dp-mean") r.alpha = 0.05;
      DrawLog log;
      SeededRng rng(8);
      const auto rel = run_mean(X, r, rng);
      expect_recount(rel, log, fmt::format("mean {} scale {}", method, scale),
                     std::string(method) == "filter" || std::string(method) == "prime" ||
                         std::string(method) == "prime-ht" ||
                         std::string(method) == "prime-boosted");
    }
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, GeometricMedian) {
  g_ok = 0;
  SeededRng data(9);
  const RowMatrix X = gaussian_cluster(20, 1500, 3, 0.1, 0.9, data);
  std::vector<GeometricMedianOptions> all;
  GeometricMedianOptions o;
  o.privacy = {1, 1e-6};
  o.localization_steps = 20;
  all.push_back(o);  // practical, estimated radius
  o.domain_radius = 50;
  all.push_back(o);  // practical, checked radius
  GeometricMedianOptions paper = o;
  paper.profile = Profile::paper;
  all.push_back(paper);  // hsu24 localization, stable boosting
  paper.boosting = PaperBoosting::fixed_order;
  paper.center = PaperCenter::fast_center;
  all.push_back(paper);
  GeometricMedianOptions hsu = o;
  hsu.method = MedianMethod::hsu24;
  all.push_back(hsu);
  for (const auto& m : all) {
    DrawLog log;
    SeededRng rng(10);
    // The radius searches are AboveThreshold runs: one draw each, whatever their stopping step.
    expect_recount(geometric_median(X, m, rng), log,
                   fmt::format("median {} {}", name_of(m.method), name_of(m.profile)));
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, Moments) {
  g_ok = 0;
  SeededRng data(11);
  RowMatrix X = table(300, 2, 12, 1);
  MomentsConfig c = make_config(300, 2, "jme", "prefix", "sqrt", false);
  c.privacy = {1, 1e-6};
  for (bool clip : {false, true}) {
    if (clip) c.clip = 2;
    DrawLog log;
    SeededRng rng(13);
    expect_recount(estimate_moments(X, c, rng), log, fmt::format("moments clip {}", clip));
  }
  // The live stream without a clip: a warm-up quantile, then one noisy count per block (each
  // block's draws added to its parallel composite before they are drawn).
  MomentsConfig live = make_config(300, 2, "jme", "prefix", "sqrt", false);
  live.privacy = {1, 1e-6};
  live.clip_block = 60;
  DrawLog log;
  SeededRng rng(14);
  MomentEstimator est(live, rng);
  for (Eigen::Index t = 0; t < X.rows(); ++t) est.push({X.row(t).data(), 2});
  const Release<int> r = est.release_fields();
  expect_recount(r, log, "moments live clip");
  std::size_t blocks = 0;
  for (const auto& e : r.ledger)
    if (e.mechanism == kParallelComposition) blocks += e.blocks.size();
  EXPECT_EQ(blocks, 5u) << "one warm-up block and four counts (the last block's count included)";
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, UserLevelFits) {
  g_ok = 0;
  UserTask t;
  t.n = 300;
  t.m = 4;
  t.d = 2;
  SeededRng data(14);
  const Vector w = make_w_star(t, data);
  const UserDataset D = make_user_task(t, w, data);
  for (auto method : {optimize::UserLevelMethod::dp_gd_user, optimize::UserLevelMethod::dp_sgd_user,
                      optimize::UserLevelMethod::dp_sgd_group, optimize::UserLevelMethod::dp_gd_filter,
                      optimize::UserLevelMethod::phased_sgd, optimize::UserLevelMethod::accelerated}) {
    for (bool bound : {false, true}) {
      optimize::UserLevelOptions o;
      o.method = method;
      o.privacy = {1, 1e-6};
      o.domain_radius = 5;
      o.steps = 6;
      if (bound) o.feature_bound = 3;
      DrawLog log;
      SeededRng rng(15);
      expect_recount(optimize::fit_user_level(D, o, rng), log,
                     fmt::format("user-level {} bound {}", name_of(method), bound));
    }
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, HeavyTailedFits) {
  g_ok = 0;
  const HeavyTailedSample s = heavy_tailed_sample();
  for (auto method : {optimize::HeavyTailedMethod::clipped_gd, optimize::HeavyTailedMethod::dp_sgd,
                      optimize::HeavyTailedMethod::lipschitz_extension}) {
    for (bool bound : {false, true}) {
      optimize::HeavyTailedOptions o;
      o.method = method;
      o.privacy = {1, method == optimize::HeavyTailedMethod::dp_sgd ? 1e-6 : 0.0};
      o.domain_radius = 3;
      if (bound) o.moment_bound = 2;
      DrawLog log;
      SeededRng rng(17);
      expect_recount(optimize::fit_heavy_tailed(s.X, s.y, o, rng), log,
                     fmt::format("heavy-tailed {} bound {}", name_of(method), bound));
    }
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, ExpTimeMeanAndTukeyMedian) {
  g_ok = 0;
  SeededRng data(21);
  RowMatrix x1(20000, 1);  // exp-time: Lemma H.11's n-check asks for about 15,000 rows here
  for (Eigen::Index i = 0; i < x1.rows(); ++i)
    x1(i, 0) = 10 + 2 * (data.uniform01() + data.uniform01() + data.uniform01() - 1.5);
  for (bool scale : {false, true}) {
    ExpTimeMeanOptions o;
    o.privacy = {1, 1e-6};
    o.window_resilience = true;  // exact R is for n of about 20: too few rows for the n-check
    if (scale) o.scale = std::vector<double>{1.0};
    DrawLog log;
    SeededRng rng(22);
    expect_recount(exp_time_mean(x1, o, rng), log, fmt::format("exp-time scale {}", scale));
  }
  const RowMatrix x2 = gaussian_cluster(2, 300, 2, 0.5, 1.0, data);
  for (int d : {1, 2}) {
    TukeyMedianOptions o;
    o.privacy = {1, 0};
    o.bounds = {-20, 20};
    o.grid = d == 1 ? 257 : 33;
    DrawLog log;
    SeededRng rng(23);
    const RowMatrix X = d == 1 ? RowMatrix(x2.leftCols(1)) : x2;
    expect_recount(tukey_median(X, o, rng), log, fmt::format("tukey median d {}", d));
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, QuantileRadius) {
  g_ok = 0;
  SeededRng data(24);
  const RowMatrix X = gaussian_cluster(3, 2000, 2, 0.5, 1.0, data);
  for (auto method : {RadiusMethod::fast_radius, RadiusMethod::fast_radius_permuted,
                      RadiusMethod::radius_finder}) {
    QuantileRadiusOptions o;
    o.method = method;
    o.privacy = {1, method == RadiusMethod::fast_radius ? 1e-6 : 0.0};
    o.min_radius = 1e-3;
    o.domain_radius = 100;
    DrawLog log;
    SeededRng rng(25);
    expect_recount(quantile_radius_release(X, o, rng), log,
                   fmt::format("quantile radius {}", name_of(method)));
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

// The paper constants run only at epsilon 10 with one phase (the sizes of
// test_user_level*.cpp's paper fits): Alg 1 on 2000 users, Alg 3 on 6000 at delta 0.5.
TEST(DrawRecount, UserLevelPaperProfile) {
  g_ok = 0;
  for (auto method : {optimize::UserLevelMethod::phased_sgd, optimize::UserLevelMethod::accelerated}) {
    const bool alg1 = method == optimize::UserLevelMethod::phased_sgd;
    UserTask t;
    t.n = alg1 ? 2000 : 6000;
    t.m = 5;
    t.d = 2;
    SeededRng data(14);
    const Vector w = make_w_star(t, data);
    const UserDataset D = make_user_task(t, w, data);
    for (bool bound : {false, true}) {
      optimize::UserLevelOptions o;
      o.method = method;
      o.profile = Profile::paper;
      o.privacy = {10, alg1 ? 1e-6 : 0.5};
      o.domain_radius = 5;
      o.alg1.q = o.alg3.q = 1;
      o.alg1.num_phases = o.alg3.num_phases = 1;
      if (bound) o.feature_bound = 3;
      DrawLog log;
      SeededRng rng(15);
      expect_recount(optimize::fit_user_level(D, o, rng), log,
                     fmt::format("user-level paper {} bound {}", name_of(method), bound));
    }
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, HeavyTailedPaperProfileAndOutputPerturbation) {
  g_ok = 0;
  const HeavyTailedSample s = heavy_tailed_sample();
  struct Case {
    const char* name;
    optimize::HeavyTailedMethod method;
    Profile profile;
    std::optional<optimize::FinalSolver> final_solver;
    std::optional<optimize::InnerSolver> inner;
  };
  using HM = optimize::HeavyTailedMethod;
  const std::vector<Case> cases = {
      {"output-perturbation", HM::output_perturbation, Profile::practical, {}, {}},
      {"output-perturbation paper", HM::output_perturbation, Profile::paper, {}, {}},
      {"lipschitz paper", HM::lipschitz_extension, Profile::paper, {}, {}},
      {"lipschitz final output-perturbation", HM::lipschitz_extension, Profile::practical,
       optimize::FinalSolver::output_perturbation, {}},
      {"lipschitz double output perturbation", HM::lipschitz_extension, Profile::paper, {},
       optimize::InnerSolver::double_output_perturbation},
      {"clipped-gd paper", HM::clipped_gd, Profile::paper, {}, {}},
  };
  for (const auto& c : cases) {
    for (bool bound : {false, true}) {
      optimize::HeavyTailedOptions o;
      o.method = c.method;
      o.profile = c.profile;
      o.final_solver = c.final_solver;
      o.inner = c.inner;
      o.privacy = {1, 0};
      o.domain_radius = 3;
      if (bound) o.moment_bound = 2;
      DrawLog log;
      SeededRng rng(17);
      expect_recount(optimize::fit_heavy_tailed(s.X, s.y, o, rng), log,
                     fmt::format("heavy-tailed {} bound {}", c.name, bound));
    }
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

TEST(DrawRecount, Training) {
  g_ok = 0;
  SeededRng data(18);
  RowMatrix X(3000, 3);  // enough rows for the private feature scale (else: nothing charged)
  std::vector<int> y(3000);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    y[static_cast<std::size_t>(i)] = static_cast<int>(data.uniform_below(2));
    for (Eigen::Index j = 0; j < 3; ++j) X(i, j) = y[static_cast<std::size_t>(i)] + data.uniform01();
  }
  using optimize::ClassifyOptimizer;
  for (auto optimizer : {ClassifyOptimizer::dp_sgd, ClassifyOptimizer::dp_adam,
                         ClassifyOptimizer::dp_adam_debiased, ClassifyOptimizer::dp_adam_jme,
                         ClassifyOptimizer::dp_adam_joint_clip}) {
    for (bool scale : {false, true}) {
      ClassifyOptions o;
      o.optimizer = optimizer;
      o.epochs = 2;
      o.batch_size = 300;
      o.privacy = {2, 1e-5};
      o.n_public = 3000;  // required under add/remove (the sampling rate's public n)
      if (scale) o.feature_scale = 2;
      DrawLog log;
      SeededRng rng(19);
      expect_recount(train_classifier(Classifier::logistic(3, 2), X, y, o, rng), log,
                     fmt::format("training {} feature scale {}", name_of(optimizer), scale));
    }
  }
  EXPECT_GT(g_ok, 0) << "no release of this family ran to the end";
}

}  // namespace
}  // namespace dpstats
