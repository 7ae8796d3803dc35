// The output-field declaration (dpstats/output_fields.hpp, issue 28): what the emitters keep and
// drop, how paths match, and that every scope resolves. The neighbour test (tests/cli/
// neighbours.py) checks the kinds against real outputs; this checks the machinery.
#include <gtest/gtest.h>

#include "dpstats/mechanisms/noise_release.hpp"
#include "dpstats/output_fields.hpp"
#include "dpstats/random/rng.hpp"

using namespace dpstats;

TEST(OutputFields, UndeclaredFieldsAreLeftOutAndNamed) {
  nlohmann::json out = {{"command", "noise"},
                        {"estimate", {1.0}},
                        {"diagnostics", {{"scale", 2.0}, {"exact_sum", 41.5}}},
                        {"secret", "x"}};
  const std::vector<std::string> removed = keep_declared(out, "noise");
  EXPECT_EQ(removed, (std::vector<std::string>{"diagnostics.exact_sum", "secret"}));
  EXPECT_FALSE(out.contains("secret"));
  EXPECT_FALSE(out["diagnostics"].contains("exact_sum"));
  EXPECT_EQ(out["diagnostics"]["scale"], 2.0);
  EXPECT_EQ(out["estimate"], nlohmann::json({1.0}));
}

TEST(OutputFields, AnUnknownScopeKeepsNothing) {
  nlohmann::json out = {{"command", "nope"}, {"estimate", 1}};
  EXPECT_EQ(keep_declared(out, "nope").size(), 2u);
  EXPECT_TRUE(out.empty());
}

TEST(OutputFields, PathsMatchKeysArraysAndWildcards) {
  // Array elements are "k[]"; '*' is one key (a histogram's categories, dots included).
  EXPECT_EQ(field_kind("mean", "ledger[].loss.epsilon"), FieldKind::public_value);
  EXPECT_EQ(field_kind("stat", "estimate.Sales"), FieldKind::released);
  nlohmann::json h = {{"command", "stat"}, {"estimate", {{"3.5", 2.0}, {"Legal, Compliance", 1.0}}}};
  EXPECT_TRUE(keep_declared(h, "stat").empty());
  EXPECT_EQ(h["estimate"].size(), 2u);
  EXPECT_FALSE(field_kind("mean", "ledger.loss.epsilon").has_value());
  EXPECT_FALSE(field_kind("mean", "diagnostics.units.columns.location").has_value());
  EXPECT_EQ(field_kind("mean", "diagnostics.units.columns[].location"), FieldKind::released);
}

TEST(OutputFields, TheFirstDeclarationOfAPathWins) {
  // moments: the stream's entry follows the (possibly released) clip, stated before the group.
  EXPECT_EQ(field_kind("moments", "ledger[].sensitivity"), FieldKind::derived);
  EXPECT_EQ(field_kind("noise", "ledger[].sensitivity"), FieldKind::public_value);
  const auto all = output_fields_json();
  EXPECT_EQ(all["moments"]["fields"]["ledger[].sensitivity"]["kind"], "derived");
}

TEST(OutputFields, EveryScopeResolvesAndIsDocumented) {
  const auto all = output_fields_json();
  const std::string md = output_fields_markdown();
  for (const char* scope : {"mean", "median", "quantile-radius", "moments", "moments/step", "stat",
                            "bounds", "noise", "fit/user-level", "fit/heavy-tailed",
                            "fit/classify"}) {
    ASSERT_TRUE(all.contains(scope)) << scope;
    EXPECT_GT(all[scope]["fields"].size(), 3u) << scope;
    EXPECT_NE(md.find(std::string("`") + scope + "`"), std::string::npos) << scope;
  }
  EXPECT_EQ(output_scope({{"command", "fit"}, {"task", "classify"}}), "fit/classify");
  EXPECT_EQ(output_scope({{"command", "mean"}}), "mean");
}

TEST(OutputFields, AReleaseKeepsEveryField) {
  SeededRng rng(1);
  const auto r = laplace_release(Vector::Constant(2, 3.0), 1.0, 1.0, rng);
  nlohmann::json out = release_fields_json(r);
  out["command"] = "noise";
  EXPECT_TRUE(keep_declared(out, "noise").empty()) << out.dump();
}
