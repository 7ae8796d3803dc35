// The ranks' agreement check covers every option a user sets (comm/fingerprint.hpp): for each
// capability that runs over ranks, the options its command declares (options.hpp), the shared
// ones it reads and the options its registry lines name are fields its options struct's
// visit_fields walks, so they enter the fingerprint every rank compares with rank 0's. A declared
// option left out of visit_fields fails here.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <string_view>

#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_request.hpp"
#include "dpstats/mean/boosted.hpp"
#include "dpstats/mean/bounded_mean.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/private_filter.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/options.hpp"
#include "dpstats/scale/bounds.hpp"
#include "dpstats/solvers/fit_registry.hpp"
#include "dpstats/stats/stats.hpp"
#include "dpstats/training/classify_request.hpp"
#include "dpstats/training/gradient_release.hpp"
#include "dpstats/training/train_classifier.hpp"
#include "dpstats/user_level/home_rank.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "dpstats/user_level/user_level_request.hpp"

namespace dpstats {
namespace {

using Names = std::set<std::string, std::less<>>;

// The names visit_fields walks, nested structs (Alg1Options, Alg3Options) included.
struct FieldNames {
  Names names;
  template <class T>
  void operator()(std::string_view name, const T& value) {
    names.emplace(name);
    if constexpr (requires(FieldNames& f) { visit_fields(value, f); }) visit_fields(value, *this);
  }
};

template <class Options>
Names visited() {
  FieldNames f;
  visit_fields(Options{}, f);
  return f.names;
}

// Options that are no field of an options struct, on purpose, and why the check does not need
// them: they do not shape the release, or they enter the fingerprint another way.
const Names kNotFields = {
    "threads",         // a seeded release is the same for any thread count
    "seed",            // the noise source; rank 0 draws
    "budget",          // the budget file lives on rank 0
    "method",          // the mean's: which options struct runs (the fingerprint's first word)
    "items_per_user",  // the data's shape: the user-level fingerprint's m
    "boost_zeta",      // boosting's own guard states its part count
    "model", "hidden", "classes",  // the classifier's shape: its own fields in the classify one
    "task",                        // the fit's: which options struct runs (the first word)
    "no_centre",                   // centre = false: the field centre
    "users", "data", "test", "save_weights",  // where the rows come from and the weights go
};

void expect_covered(const Names& readable, const Names& fields, std::string_view what) {
  for (const auto& name : readable)
    if (!kNotFields.contains(name))
      EXPECT_TRUE(fields.contains(name)) << what << ": option '" << name
                                         << "' is not in its fingerprint (visit_fields)";
}

Names declared(std::string_view command) {
  Names out;
  for (const auto& d : declared_options())
    if (d.command == command) out.emplace(d.name);
  return out;
}

Names registry_options(std::span<const MethodInfo> registry) {
  Names out;
  for (const auto& m : registry) out.insert(m.options.begin(), m.options.end());
  return out;
}

Names with(Names names, std::initializer_list<const char*> more) {
  names.insert(more.begin(), more.end());
  return names;
}

const std::initializer_list<const char*> kTarget = {"epsilon", "delta"};

TEST(Fingerprints, TheMeansMethodsOverRanksCoverTheirOptions) {
  // The methods whose passes run over ranks and the options struct each runs.
  const std::pair<const char*, Names> structs[] = {
      {"robust", visited<PrimeOptions>()},         {"prime", visited<PrimeOptions>()},
      {"prime-ht", visited<PrimeOptions>()},       {"prime-boosted", visited<PrimeOptions>()},
      {"prime-ht-boosted", visited<PrimeOptions>()}, {"filter", visited<PrivateFilterOptions>()},
      {"dp-mean", visited<DpMeanOptions>()},       {"bounded", visited<BoundedMeanOptions>()}};
  Names covered;
  for (const auto& [name, fields] : structs) {
    const MethodInfo& m = find_method(mean_methods(), "mean", name);
    expect_covered(with(Names(m.options.begin(), m.options.end()), kTarget), fields, name);
    covered.insert(fields.begin(), fields.end());
  }
  // Every declared option of the mean is in some fingerprint, or read only by the methods that
  // refuse several ranks (exp-time, tukey-median).
  Names single_process;
  for (const auto& m : mean_methods())
    if (m.name == "exp-time" || m.name == "tukey-median")
      single_process.insert(m.options.begin(), m.options.end());
  for (const auto& name : declared("mean"))
    EXPECT_TRUE(covered.contains(name) || kNotFields.contains(name) ||
                single_process.contains(name))
        << "mean option '" << name << "' is in no fingerprint";
}

TEST(Fingerprints, TheMedianCoversItsOptions) {
  const Names options = with(registry_options(median_methods()), {"epsilon", "delta"});
  expect_covered(options, visited<GeometricMedianOptions>(), "median (registry)");
  expect_covered(declared("median"), visited<GeometricMedianOptions>(), "median (declared)");
  expect_covered(with({}, {"scale_share", "profile"}), visited<GeometricMedianOptions>(),
                 "median (shared)");
}

TEST(Fingerprints, TheStatisticsCoverTheirOptions) {
  const Names fields = visited<stats::StatOptions>();
  expect_covered(with(registry_options(stats::registry()), kTarget), fields, "stat (registry)");
  expect_covered(declared("stat"), fields, "stat (declared)");
}

TEST(Fingerprints, TheFitTasksCoverTheirOptions) {
  const Names every_task = {"holdout", "holdout_share", "holdout_loss_bound"};
  const Names user_level = visited<optimize::UserLevelOptions>();
  const Names heavy = visited<optimize::HeavyTailedOptions>();
  const Names classify = visited<optimize::ClassifyOptions>();
  for (const auto& m : optimize::fit_methods(optimize::FitTask::user_level))
    expect_covered(Names(m.options.begin(), m.options.end()), user_level, m.name);
  for (const auto& m : optimize::fit_methods(optimize::FitTask::heavy_tailed))
    expect_covered(Names(m.options.begin(), m.options.end()), heavy, m.name);
  for (const auto& m : optimize::classify_optimizers())
    expect_covered(Names(m.options.begin(), m.options.end()), classify, m.name);
  expect_covered(every_task, user_level, "user-level");
  expect_covered(every_task, heavy, "heavy-tailed");
  expect_covered(with(every_task, {"epochs", "batch_size", "clip"}), classify, "classify");
  // Every declared option of `fit` is a field of at least one task's options.
  for (const auto& name : declared("fit"))
    EXPECT_TRUE(kNotFields.contains(name) || user_level.contains(name) || heavy.contains(name) ||
                classify.contains(name))
        << "fit option '" << name << "' is in no task's fingerprint";
}

// Each fit task's request (the options its flags and keywords fill): every field is a declared
// fit option and reaches the task's fingerprint through the copy into its options struct.
template <class Request>
void expect_request_covered(const Names& fields, std::string_view task) {
  visit_fields(Request{}, [&](std::string_view name, const auto&) {
    EXPECT_EQ(find_option("fit", name).command, "fit") << task << ": " << name;
    EXPECT_TRUE(fields.contains(std::string(name)) || kNotFields.contains(std::string(name)))
        << task << " option '" << name << "' is in no fingerprint";
  });
}

TEST(Fingerprints, TheFitTasksRequestsReachTheirFingerprints) {
  expect_request_covered<optimize::ClassifyRequest>(visited<optimize::ClassifyOptions>(),
                                                    "classify");
  expect_request_covered<optimize::HeavyTailedRequest>(visited<optimize::HeavyTailedOptions>(),
                                                       "heavy-tailed");
  expect_request_covered<optimize::UserLevelRequest>(visited<optimize::UserLevelOptions>(),
                                                     "user-level");
}

TEST(Fingerprints, TheBoundsCoverTheirOptions) {
  expect_covered(with(declared("bounds"), kTarget), visited<BoundsOptions>(), "bounds");
}

TEST(Fingerprints, TheMomentsCoverTheirOptions) {
  const Names fields = visited<moments::MomentsConfig>();
  expect_covered(registry_options(moments::moments_methods()), fields, "moments (registry)");
  expect_covered(declared("moments"), fields, "moments (declared)");
  expect_covered(with({}, {"epsilon", "delta", "rho", "neighbouring", "scale_share", "profile"}),
                 fields, "moments (shared)");
}

TEST(Fingerprints, BoostingAndTheHomeRankGuardCoverWhatTheyRead) {
  // Boosting checks its base, part count (from boost_zeta) and target; each part's base run
  // checks the base's own options (PrimeOptions above).
  expect_covered(with({"parts", "base_method"}, kTarget), visited<BoostingFacts>(), "boosting");
  // gather_users moves the rows by the declared items per user and clips to the bounds.
  expect_covered({"items_per_user", "feature_bound", "label_bound"},
                 visited<optimize::HomeRankOptions>(), "home rank");
  for (const char* name : {"items_per_user", "feature_bound", "label_bound"})
    EXPECT_EQ(find_option("fit", name).command, "fit") << name << " is a declared fit option";
}

TEST(Fingerprints, TheRobustMeansShareOneFieldList) {
  // PrimeOptions and PrivateFilterOptions list their common fields once (visit_robust_fields).
  FieldNames prime, filter;
  visit_robust_fields(PrimeOptions{}, prime);
  visit_robust_fields(PrivateFilterOptions{}, filter);
  EXPECT_EQ(prime.names, filter.names);
  for (const auto& name : prime.names) {
    EXPECT_TRUE(visited<PrimeOptions>().contains(name)) << name;
    EXPECT_TRUE(visited<PrivateFilterOptions>().contains(name)) << name;
  }
}

TEST(Fingerprints, AFieldLeftOutFailsTheCheck) {
  // expect_covered itself: an option missing from the fields is reported.
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    expect_covered({"topk_multiplier"}, {"alpha"}, "example");
  }
  EXPECT_EQ(failures.size(), 1);
}

TEST(Fingerprints, EveryFieldChangesTheText) {
  // Exact doubles: two options one ulp apart are two fingerprints; an absent optional is not 0.
  PrimeOptions a, b;
  b.topk_multiplier = std::nextafter(a.topk_multiplier, 3.0);
  EXPECT_NE(fingerprint_of("prime", a, 2), fingerprint_of("prime", b, 2));
  EXPECT_NE(fingerprint_of("prime", a, 2), fingerprint_of("prime", a, 3));
  GeometricMedianOptions m0, m1;
  m1.domain_radius = 0.0;
  EXPECT_NE(fingerprint_of("median", m0, 2), fingerprint_of("median", m1, 2));
  stats::StatOptions s0, s1;
  s0.categories = {"a,b"};
  s1.categories = {"a", "b"};
  EXPECT_NE(fingerprint_of("stat", s0, 1), fingerprint_of("stat", s1, 1));
  optimize::UserLevelOptions u0, u1;
  u1.alg3.users_per_step = 10;
  EXPECT_NE(fingerprint_of("user-level", u0, 2), fingerprint_of("user-level", u1, 2));
  // The moments: a workload or factorization enters as its spec.
  moments::MomentsConfig c0 = moments::make_config(10, 2, "jme", "prefix", "auto", false);
  moments::MomentsConfig c1 = moments::make_config(10, 2, "jme", "decay:0.9", "auto", false);
  moments::MomentsConfig c2 = moments::make_config(10, 2, "jme", "prefix", "blt:2", false);
  EXPECT_NE(fingerprint_of("moments", c0, 2), fingerprint_of("moments", c1, 2));
  EXPECT_NE(fingerprint_of("moments", c0, 2), fingerprint_of("moments", c2, 2));
  // The home-rank guard: an absent bound is not a bound of -1.
  const optimize::HomeRankOptions h0{4, std::nullopt, 1.0}, h1{4, -1.0, 1.0};
  EXPECT_NE(fingerprint_of("user-level rows", h0, 2), fingerprint_of("user-level rows", h1, 2));
}

}  // namespace
}  // namespace dpstats
