// Private histogram of one categorical column (stats/stats.hpp), add/remove neighbouring.
//  * public categories: every listed category's count gets noise (one row moves one count by 1:
//    l1 = l2 sensitivity 1); rows of other categories are dropped.
//  * no categories: the stability histogram (mechanisms/histogram.hpp) selects which observed
//    categories to release; bins are the ranks of the observed categories in sorted order, a
//    labelling that is never released (only the released categories' names are).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "internal.hpp"

namespace dpstats::stats {
namespace {

std::map<std::string, std::int64_t> tally(std::span<const std::string> values) {
  std::map<std::string, std::int64_t> counts;
  for (const auto& v : values) ++counts[v];
  return counts;
}

Release<Histogram> public_categories(std::span<const std::string> values, const StatOptions& o,
                                     Rng& rng, Budget* budget) {
  // plan: one noisy count per public category
  std::vector<std::string> cats = o.categories;
  std::sort(cats.begin(), cats.end());
  require(std::adjacent_find(cats.begin(), cats.end()) == cats.end(),
          "categories must not repeat a category");
  ReleaseBudget account = detail::release_budget(o, budget);
  const detail::Noise noise(1, 1.0, o, cats.size(), "category counts", 1);
  // charge
  account.charge(noise.entry());
  // run
  const auto counts = tally(values);
  Histogram h{cats, Vector(static_cast<Eigen::Index>(cats.size()))};
  for (std::size_t k = 0; k < cats.size(); ++k) {
    const auto it = counts.find(cats[k]);
    const double c = it == counts.end() ? 0.0 : static_cast<double>(it->second);
    h.counts[static_cast<Eigen::Index>(k)] = std::max(0.0, noise.apply(c, rng));
  }
  // seal
  nlohmann::json diagnostics = {{"noise_scale", noise.scale()}, {"selection", "public categories"}};
  return seal(std::move(h), account, detail::facts(o, Neighbouring::add_remove), rng,
              std::move(diagnostics));
}

Release<Histogram> selected_categories(std::span<const std::string> values, const StatOptions& o,
                                       Rng& rng, Budget* budget) {
  // validate: partition selection needs an approximate target
  require(o.privacy.delta > 0,
          "a histogram without public categories selects them privately and needs delta > 0; "
          "give delta, or list the categories");
  // plan: one stability histogram at the whole (epsilon, delta), counted by basic composition
  ReleaseBudget account(o.privacy.loss(), Accountant::basic, budget);
  const LedgerEntry entry = stability_histogram_entry(o.privacy.epsilon, o.privacy.delta,
                                                      Neighbouring::add_remove, "category counts");
  // charge
  account.charge(entry);
  // run
  const auto counts = tally(values);
  std::vector<std::string> names;
  std::vector<std::pair<std::int64_t, std::int64_t>> occupied;
  for (const auto& [name, c] : counts) {
    occupied.emplace_back(static_cast<std::int64_t>(names.size()), c);
    names.push_back(name);
  }
  const StabilityHistogram sh = stability_histogram_counts(
      occupied, o.privacy.epsilon, o.privacy.delta, Neighbouring::add_remove, rng);
  Histogram h;
  h.counts.resize(static_cast<Eigen::Index>(sh.noisy_counts.size()));
  for (const auto& [bin, c] : sh.noisy_counts) {
    h.counts[static_cast<Eigen::Index>(h.categories.size())] = c;
    h.categories.push_back(names[static_cast<std::size_t>(bin)]);
  }
  // seal
  nlohmann::json diagnostics = {{"noise_scale", sh.laplace_scale},
                                {"threshold", sh.threshold},
                                {"selection", "stability histogram (categories with a noisy count "
                                              "below the threshold are not released)"}};
  return seal(std::move(h), account, detail::facts(o, Neighbouring::add_remove), rng,
              std::move(diagnostics));
}

}  // namespace

Release<Histogram> histogram(std::span<const std::string> values, const StatOptions& o, Rng& rng,
                             Budget* budget) {
  detail::validate_common(o);
  require(o.bounds.empty(), "bounds does not apply to histogram");
  require(!values.empty(), "histogram needs at least one value, got none");
  return o.categories.empty() ? selected_categories(values, o, rng, budget)
                              : public_categories(values, o, rng, budget);
}

std::span<const MethodInfo> registry() {
  static const std::vector<MethodInfo> table = {
      {"count", "number of rows (add/remove one row)", {}},
      {"sum", "per-column sum of values clipped to bounds", {"bounds", "scale_share"}},
      {"mean", "per-column mean of values clipped to bounds", {"bounds", "scale_share"}},
      {"variance", "per-column variance of values clipped to bounds", {"bounds", "scale_share"}},
      {"std", "per-column standard deviation of values clipped to bounds",
       {"bounds", "scale_share"}},
      {"quantiles", "per-column quantiles (several at once) on a grid within bounds",
       {"bounds", "scale_share", "quantiles", "grid_size"}},
      {"histogram", "counts of a categorical column; categories public or selected privately",
       {"categories"}},
  };
  return table;
}

}  // namespace dpstats::stats
