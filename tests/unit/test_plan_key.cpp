// PRIME's and the private filter's plan cache (robust_mean_core.hpp, cached_plan) is keyed by
// plan_key, built from the options' visit_fields: two options that differ in any visited field
// get different keys, so a stale cached plan is never reused when a field is added. The scale's
// values are the one exception on purpose (the plan reads whether one is supplied).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../../src/mean/robust_mean_core.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/private_filter.hpp"

namespace dpstats {
namespace {

// Another value of the same type: a number grows, a flag flips, an enum moves to its next
// value, an absent optional gets a value and a present one another.
template <class T>
void perturb(T& x) {
  if constexpr (std::is_same_v<T, bool>) {
    x = !x;
  } else if constexpr (std::is_enum_v<T>) {
    x = static_cast<T>(static_cast<int>(x) == 0 ? 1 : 0);
  } else if constexpr (std::is_arithmetic_v<T>) {
    x = x + 1;
  } else if constexpr (std::is_same_v<T, std::optional<std::vector<double>>>) {
    x = x ? std::optional<std::vector<double>>{} : std::vector<double>{1.0};
  } else {  // std::optional of a number
    x = x ? *x + 0.125 : 0.25;
  }
}

// The names of the fields visit_fields walks, in order.
template <class Options>
std::vector<std::string> field_names() {
  std::vector<std::string> names;
  Options o;
  visit_fields(o, [&](std::string_view name, const auto&) { names.emplace_back(name); });
  return names;
}

// Options equal to `base` but for the field `field`.
template <class Options>
Options changed(const Options& base, std::string_view field) {
  Options o = base;
  visit_fields(o, [&](std::string_view name, auto& value) {
    if (name == field) perturb(value);
  });
  return o;
}

template <class Options>
void expect_every_field_keyed(const Options& base) {
  const std::string key = mean_detail::plan_key(200, 3, base);
  const auto names = field_names<Options>();
  ASSERT_GE(names.size(), 10u);
  for (const auto& name : names)
    EXPECT_NE(mean_detail::plan_key(200, 3, changed(base, name)), key)
        << "field '" << name << "' does not enter the plan cache's key";
  EXPECT_NE(mean_detail::plan_key(201, 3, base), key);
  EXPECT_NE(mean_detail::plan_key(200, 4, base), key);
}

TEST(PlanKey, EveryPrimeFieldEntersTheKey) {
  PrimeOptions o;
  o.privacy = {1.0, 1e-6};
  expect_every_field_keyed(o);
  o.scale = std::vector<double>{2.0};
  o.scale_share = 0.1;
  expect_every_field_keyed(o);
}

TEST(PlanKey, EveryFilterFieldEntersTheKey) {
  PrivateFilterOptions o;
  o.privacy = {1.0, 1e-6};
  expect_every_field_keyed(o);
}

TEST(PlanKey, OnlyTheScalesPresenceEntersTheKey) {
  PrimeOptions a, b;
  a.scale = std::vector<double>{1.0, 2.0, 3.0};
  b.scale = std::vector<double>{5.0};
  EXPECT_EQ(mean_detail::plan_key(200, 3, a), mean_detail::plan_key(200, 3, b));
}

}  // namespace
}  // namespace dpstats
