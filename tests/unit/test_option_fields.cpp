// A request lists its declared options once (dpstats/option_fields.hpp): the tool's flags, the
// Python keywords, the "does not apply" check and the copy into a method's options all come from
// that list, and which methods read an option from its declaration. These tests tie the list to
// the declarations both ways, so a declaration that no request field carries (missing from the
// tool and Python) fails here, as does a field with no declaration; the ranks' fingerprint side
// is tests/unit/test_fingerprints.cpp.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>

#include "dpstats/error.hpp"
#include "dpstats/mean/methods.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/private_filter.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/mechanisms/noise_mechanism.hpp"
#include "dpstats/median/median_command.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/moments/moments_request.hpp"
#include "dpstats/option_fields.hpp"
#include "dpstats/options.hpp"
#include "dpstats/stats/stats.hpp"
#include "dpstats/training/gradient_release.hpp"

namespace dpstats {
namespace {

using Names = std::set<std::string, std::less<>>;

// The command's own declarations that are request options (not the method's name itself).
Names declared(std::string_view command) {
  Names out;
  for (const auto& d : declared_options())
    if (d.command == command && d.name != "method") out.emplace(d.name);
  return out;
}

// The request's fields that are the command's own options (the shared ones it lists aside).
template <class Request>
Names own_fields(std::string_view command) {
  Names out;
  visit_fields(Request{}, [&](std::string_view name, const auto&) {
    if (!find_option(command, name).command.empty()) out.emplace(name);
  });
  return out;
}

// Each declared option is a field of the request, and each field is declared.
void expect_same(const Names& declarations, const Names& fields, std::string_view command) {
  for (const auto& name : declarations)
    EXPECT_TRUE(fields.contains(name)) << command << " option '" << name
                                       << "' is declared but no field of its request: it is "
                                          "on neither the tool nor Python";
  for (const auto& name : fields)
    EXPECT_TRUE(declarations.contains(name)) << command << " request field '" << name
                                             << "' has no declaration";
}

TEST(OptionFields, EveryDeclaredMeanOptionIsAFieldOfTheRequest) {
  expect_same(declared("mean"), own_fields<MeanRequest>("mean"), "mean");
}

TEST(OptionFields, EveryDeclaredStatOptionIsAFieldOfTheRequest) {
  expect_same(declared("stat"), own_fields<stats::StatRequest>("stat"), "stat");
  visit_fields(stats::StatRequest{}, [](std::string_view name, const auto&) {
    EXPECT_NO_THROW(find_option("stat", name)) << name;
  });
}

TEST(OptionFields, EveryFieldOfTheRequestIsDeclared) {
  // find_option throws for a name that is declared neither for the mean nor shared.
  visit_fields(MeanRequest{}, [](std::string_view name, const auto&) {
    EXPECT_NO_THROW(find_option("mean", name)) << name;
  });
}

TEST(OptionFields, ADeclarationNoRequestCarriesFails) {
  // The check itself: a new declaration without its field is reported (the product declares
  // none such; this is the test's own list).
  Names with_new = declared("mean");
  with_new.emplace("new_option");
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    expect_same(with_new, own_fields<MeanRequest>("mean"), "mean");
  }
  ASSERT_EQ(failures.size(), 1);
  EXPECT_NE(std::string(failures.GetTestPartResult(0).message()).find("new_option"),
            std::string::npos);
}

TEST(OptionFields, TheReadersOfADeclarationAreMethodsOfItsCommand) {
  for (const auto& d : declared_options()) {
    if (d.methods.empty()) continue;
    ASSERT_TRUE(d.command == "mean" || d.command == "median" || d.command == "stat" ||
                d.command == "moments" || d.command == "fit")
        << d.name << ": readers of a command whose registry does not read them";
    const auto registry = d.command == "mean"     ? mean_methods()
                          : d.command == "median" ? median_methods()
                          : d.command == "stat"   ? stats::registry()
                          : d.command == "fit"    ? optimize::classify_optimizers()
                                                  : moments::moments_methods();
    std::string_view rest = d.methods;
    while (!rest.empty()) {
      const auto space = rest.find(' ');
      const std::string_view method = rest.substr(0, space);
      EXPECT_NO_THROW(find_method(registry, d.command, method)) << d.name << ": " << method;
      rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    }
  }
  // The registry lines read them from there.
  const MethodInfo& filter = find_method(mean_methods(), "mean", "filter");
  EXPECT_NE(std::find(filter.options.begin(), filter.options.end(), "topk_multiplier"),
            filter.options.end());
  EXPECT_NE(std::find(filter.options.begin(), filter.options.end(), "T"), filter.options.end());
  const MethodInfo& bounded = find_method(mean_methods(), "mean", "bounded");
  EXPECT_EQ(std::find(bounded.options.begin(), bounded.options.end(), "topk_multiplier"),
            bounded.options.end());
  const MethodInfo& jme = find_method(optimize::classify_optimizers(), "fit", "dp-adam-jme");
  EXPECT_NE(std::find(jme.options.begin(), jme.options.end(), "lambda"), jme.options.end());
  EXPECT_NE(std::find(jme.options.begin(), jme.options.end(), "one_unit"), jme.options.end());
  const MethodInfo& adam = find_method(optimize::classify_optimizers(), "fit", "adam");
  EXPECT_TRUE(adam.options.empty());
  const MethodInfo& hsu24 = find_method(median_methods(), "median", "hsu24");
  EXPECT_NE(std::find(hsu24.options.begin(), hsu24.options.end(), "min_radius"),
            hsu24.options.end());
  EXPECT_EQ(std::find(hsu24.options.begin(), hsu24.options.end(), "center"), hsu24.options.end());
  const MethodInfo& ime = find_method(moments::moments_methods(), "moments", "ime");
  EXPECT_EQ(ime.options, std::vector<std::string_view>{"alpha"});
  const MethodInfo& q = find_method(stats::registry(), "stat", "quantiles");
  EXPECT_EQ(q.options, (std::vector<std::string_view>{"scale_share", "bounds", "quantiles",
                                                      "grid_size"}));
}

TEST(OptionFields, AStatisticRefusesTheOptionsItDoesNotRead) {
  stats::StatRequest r;
  r.bounds = std::vector<double>{0, 1, 2, 5};
  r.grid_size = 64;
  stats::StatOptions o;
  EXPECT_THROW(stats::apply_request(stats::Statistic::mean, r, o), InvalidArgument);
  r.grid_size.reset();
  stats::apply_request(stats::Statistic::mean, r, o);
  ASSERT_EQ(o.bounds.size(), 2u);
  EXPECT_EQ(o.bounds[1].lower, 2);
  EXPECT_EQ(o.bounds[1].upper, 5);
  r.bounds = std::vector<double>{0, 1, 2};
  EXPECT_THROW(stats::apply_request(stats::Statistic::mean, r, o), InvalidArgument);
}

TEST(OptionFields, EveryDeclaredMedianOptionIsAFieldOfTheRequest) {
  expect_same(declared("median"), own_fields<MedianRequest>("median"), "median");
}

TEST(OptionFields, TheMediansOptionsAreCheckedAndCopiedByName) {
  MedianRequest r;
  r.center = PaperCenter::fast_center;
  r.domain_radius = 20;
  r.profile = Profile::paper;
  const std::vector<std::string> target = {"epsilon", "delta", "budget"};
  const GeometricMedianOptions o = median_options(MedianCommand::fast, r, target);
  EXPECT_EQ(o.method, MedianMethod::fast);
  EXPECT_EQ(o.center, PaperCenter::fast_center);
  EXPECT_EQ(o.profile, Profile::paper);
  ASSERT_TRUE(o.domain_radius.has_value());
  EXPECT_EQ(*o.domain_radius, 20);
  EXPECT_EQ(o.bound_check_share, GeometricMedianOptions{}.bound_check_share);
  // center and profile are the fast pipeline's; the non-private solver reads nothing.
  EXPECT_THROW(median_options(MedianCommand::hsu24, r, target), InvalidArgument);
  EXPECT_THROW(median_options(MedianCommand::weiszfeld, MedianRequest{},
                              std::vector<std::string>{"budget"}),
               InvalidArgument);
  EXPECT_NO_THROW(median_options(MedianCommand::weiszfeld, MedianRequest{}, {}));
}

TEST(OptionFields, GivenOptionsAreTheSetFieldsInOrder) {
  MeanRequest r;
  r.topk_multiplier = 3;
  r.alpha = 0.1;
  r.fallback = false;
  EXPECT_EQ(given_options(r), (std::vector<std::string>{"alpha", "topk_multiplier", "fallback"}));
}

TEST(OptionFields, TheCopyIsByNameAndKeepsDefaults) {
  MeanRequest r;
  r.alpha = 0.1;
  r.topk_multiplier = 3;
  r.T1 = 4;
  r.fallback = false;
  r.scale = std::vector<double>{2.0};
  r.boost_zeta = 0.01;  // no field of PrimeOptions: not copied
  PrimeOptions o;
  copy_given(r, o);
  EXPECT_EQ(o.alpha, 0.1);
  EXPECT_EQ(o.topk_multiplier, 3);
  EXPECT_EQ(o.T1, 4);
  EXPECT_EQ(o.T2, PrimeOptions{}.T2);
  EXPECT_FALSE(o.fallback);
  ASSERT_TRUE(o.scale.has_value());
  EXPECT_EQ(*o.scale, std::vector<double>{2.0});
  EXPECT_FALSE(o.scale_share.has_value());
  EXPECT_EQ(o.failure_probability, PrimeOptions{}.failure_probability);
  PrivateFilterOptions f;
  r.T1.reset();
  r.T = 7;
  copy_given(r, f);
  EXPECT_EQ(f.T, 7);
  EXPECT_EQ(f.topk_multiplier, 3);
}

TEST(OptionFields, EveryDeclaredNoiseOptionIsAFieldOfTheRequest) {
  expect_same(declared("noise"), own_fields<NoiseRequest>("noise"), "noise");
  SeededRng rng(1);
  const Vector values = Vector::Constant(2, 1.0);
  EXPECT_THROW(noise_release(NoiseRequest{.mechanism = NoiseMechanism::laplace}, values,
                             {1, 0}, rng),
               InvalidArgument);  // sensitivity is required
}

TEST(OptionFields, EveryDeclaredMomentsOptionIsAFieldOfTheRequest) {
  // --steps (the horizon: the data's rows, or the live stream's) and --no-centre (centre =
  // false) are the callers'.
  Names own = declared("moments");
  own.erase("steps");
  own.erase("no_centre");
  expect_same(own, own_fields<moments::MomentsRequest>("moments"), "moments");
}

TEST(OptionFields, TheMomentsOptionsAreCopiedByName) {
  moments::MomentsRequest r;
  r.workload = "decay:0.9";
  r.clip_block = 3;
  r.lambda = 2;
  r.on_norm = moments::NormPolicy::reject;
  r.neighbouring = Neighbouring::add_remove;
  const moments::MomentsOptions o = moments_options(moments::Method::lambda_jme, r, 10, 2);
  EXPECT_EQ(o.method, moments::Method::lambda_jme);
  EXPECT_EQ(o.steps, 10u);
  EXPECT_EQ(o.workload, "decay:0.9");
  EXPECT_EQ(o.factorization, moments::MomentsOptions{}.factorization);
  EXPECT_EQ(o.clip_block, 3u);
  ASSERT_TRUE(o.lambda.has_value());
  EXPECT_EQ(*o.lambda, 2);
  EXPECT_EQ(o.on_norm, moments::NormPolicy::reject);
  EXPECT_EQ(o.neighbouring, Neighbouring::add_remove);
  r = {};
  r.alpha = 0.3;  // ime's
  moments::MomentsOptions jme = moments_options(moments::Method::jme, r, 10, 2);
  jme.privacy = {1, 1e-6};
  EXPECT_THROW(moments::make_config(jme), InvalidArgument);
}

}  // namespace
}  // namespace dpstats
