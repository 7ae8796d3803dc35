// Private histogram of one categorical column (stats/stats.hpp), add/remove neighbouring.
//  * public categories: every listed category's count gets noise (one row moves one count by 1:
//    l1 = l2 sensitivity 1); rows of other categories are dropped.
//  * no categories: the stability histogram (mechanisms/histogram.hpp) selects which observed
//    categories to release; bins are the ranks of the observed categories in sorted order, a
//    labelling that is never released (only the released categories' names are).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "dpstats/options.hpp"
#include "internal.hpp"

namespace dpstats::stats {
namespace {

using Tally = std::map<std::string, std::int64_t>;
using Words = std::vector<std::pair<std::string, std::int64_t>>;

// (name length, name bytes, word) per entry, as raw bytes (a category name may be any bytes).
Bytes encode(const Words& entries) {
  Bytes out;
  auto put = [&](const void* p, std::size_t size) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out.insert(out.end(), b, b + size);
  };
  for (const auto& [name, word] : entries) {
    const std::uint64_t size = name.size();
    put(&size, sizeof size);
    put(name.data(), name.size());
    put(&word, sizeof word);
  }
  return out;
}

Words decode(const Bytes& b) {
  Words out;
  for (std::size_t at = 0; at < b.size();) {
    std::uint64_t size = 0;
    std::int64_t word = 0;
    std::memcpy(&size, b.data() + at, sizeof size);
    std::string name(reinterpret_cast<const char*>(b.data() + at + sizeof size), size);
    at += sizeof size + size;
    std::memcpy(&word, b.data() + at, sizeof word);
    at += sizeof word;
    out.emplace_back(std::move(name), word);
  }
  return out;
}

// The count of every category over the ranks (one process: these values): each rank's tally,
// gathered and added (exact integers: the same sorted map whatever the cut of the rows).
Tally tally(std::span<const std::string> values, Communicator& comm) {
  Tally counts;
  for (const auto& v : values) ++counts[v];
  if (comm.size() == 1) return counts;
  Tally all;
  for (const Bytes& b : comm.allgather(encode(Words(counts.begin(), counts.end()))))
    for (const auto& [name, c] : decode(b)) all[name] += c;
  return all;
}

// The released histogram, drawn on rank 0 and given to every rank (noise once).
Histogram histogram_on_root(Communicator& comm, const std::function<Histogram()>& draw) {
  if (comm.size() == 1) return draw();
  const Bytes b = on_root_bytes(comm, [&] {
    const Histogram h = draw();
    Words entries;
    for (Eigen::Index k = 0; k < h.counts.size(); ++k)
      entries.emplace_back(h.categories[static_cast<std::size_t>(k)],
                           std::bit_cast<std::int64_t>(h.counts[k]));
    return encode(entries);
  });
  Histogram h;
  const Words entries = decode(b);
  h.counts.resize(static_cast<Eigen::Index>(entries.size()));
  for (const auto& [name, word] : entries) {
    h.counts[static_cast<Eigen::Index>(h.categories.size())] = std::bit_cast<double>(word);
    h.categories.push_back(name);
  }
  return h;
}

Release<Histogram> public_categories(std::span<const std::string> values, const StatOptions& o,
                                     Rng& rng, Budget* budget, Communicator& comm) {
  // plan: one noisy count per public category
  std::vector<std::string> cats = o.categories;
  std::sort(cats.begin(), cats.end());
  require(std::adjacent_find(cats.begin(), cats.end()) == cats.end(),
          "categories must not repeat a category");
  ReleaseBudget account = detail::release_budget(o, budget);
  const detail::Noise noise(1, 1.0, o, cats.size(), "category counts", 1);
  // charge
  all_or_none(comm, [&] { account.charge(noise.entry()); });  // the budget lives on rank 0
  // run: the counts over every rank, the noise on rank 0
  const auto counts = tally(values, comm);
  Histogram h = histogram_on_root(comm, [&] {
    Histogram out{cats, Vector(static_cast<Eigen::Index>(cats.size()))};
    for (std::size_t k = 0; k < cats.size(); ++k) {
      const auto it = counts.find(cats[k]);
      const double c = it == counts.end() ? 0.0 : static_cast<double>(it->second);
      out.counts[static_cast<Eigen::Index>(k)] = std::max(0.0, noise.apply(c, rng));
    }
    return out;
  });
  // seal: every listed category's count at once (a union over them), the clamp at 0 only moving
  // a count towards its truth (docs/proofs/stats.md "Histogram")
  const double radius = noise.bound(detail::kStatedBeta / static_cast<double>(cats.size()));
  nlohmann::json diagnostics = {
      {"noise_scale", noise.noise_scale()},
      {"selection", "public categories"},
      {"stated_error",
       {{"radius", radius}, {"confidence", 1 - detail::kStatedBeta}, {"noise_term", radius},
        {"meaning", "|count - the category's number of rows| <= radius for every listed "
                    "category at once, with probability >= confidence"}}}};
  return seal(std::move(h), account, detail::facts(o, Neighbouring::add_remove), rng,
              std::move(diagnostics));
}

// The stability histogram's noise is discrete Laplace of scale t: P(|Y| >= k) = 2 q^k / (1 + q)
// with q = e^(-1/t), so |Y| <= t ln(2 / beta) with probability >= 1 - beta. The released set
// depends on the noise, so the statement is per category, not for all released ones at once
// (docs/proofs/stats.md "Histogram").
nlohmann::json selected_stated_error(double t, double threshold) {
  const double radius = t * std::log(2 / detail::kStatedBeta);
  return {{"radius", radius},
          {"confidence", 1 - detail::kStatedBeta},
          {"noise_term", radius},
          {"unreleased_below", threshold + radius},
          {"meaning", "for each category on its own, with probability >= confidence: a released "
                      "count is within radius of the category's number of rows, and a category "
                      "that is not released has fewer than unreleased_below rows (the released "
                      "set depends on the noise: not a statement about all released categories "
                      "at once)"}};
}

Release<Histogram> selected_categories(std::span<const std::string> values, const StatOptions& o,
                                       Rng& rng, Budget* budget, Communicator& comm) {
  // validate: partition selection needs an approximate target
  require(o.privacy.delta > 0,
          "a histogram without public categories selects them privately and needs delta > 0; "
          "give delta, or list the categories");
  // plan: one stability histogram at the whole (epsilon, delta), counted by basic composition
  ReleaseBudget account(o.privacy.loss(), Accountant::basic, budget);
  const LedgerEntry entry = stability_histogram_entry(o.privacy.epsilon, o.privacy.delta,
                                                      Neighbouring::add_remove, "category counts");
  // charge
  all_or_none(comm, [&] { account.charge(entry); });  // the budget lives on rank 0
  // run: the counts over every rank, the selection and noise on rank 0
  const auto counts = tally(values, comm);
  std::vector<std::string> names;
  std::vector<std::pair<std::int64_t, std::int64_t>> occupied;
  for (const auto& [name, c] : counts) {
    occupied.emplace_back(static_cast<std::int64_t>(names.size()), c);
    names.push_back(name);
  }
  double laplace_scale = 0, threshold = 0;  // public (epsilon and delta): rank 0 sends them
  Histogram h = histogram_on_root(comm, [&] {
    const StabilityHistogram sh = stability_histogram_counts(
        occupied, o.privacy.epsilon, o.privacy.delta, Neighbouring::add_remove, rng);
    laplace_scale = sh.laplace_scale;
    threshold = sh.threshold;
    Histogram out;
    out.counts.resize(static_cast<Eigen::Index>(sh.noisy_counts.size()));
    for (const auto& [bin, c] : sh.noisy_counts) {
      out.counts[static_cast<Eigen::Index>(out.categories.size())] = c;
      out.categories.push_back(names[static_cast<std::size_t>(bin)]);
    }
    return out;
  });
  const auto scales = on_root(comm, [&] { return std::vector<double>{laplace_scale, threshold}; });
  laplace_scale = scales[0], threshold = scales[1];
  // seal
  nlohmann::json diagnostics = {{"noise_scale", laplace_scale},
                                {"threshold", threshold},
                                {"selection", "stability histogram (categories with a noisy count "
                                              "below the threshold are not released)"},
                                {"stated_error", selected_stated_error(laplace_scale, threshold)}};
  return seal(std::move(h), account, detail::facts(o, Neighbouring::add_remove), rng,
              std::move(diagnostics));
}

}  // namespace

Release<Histogram> histogram(std::span<const std::string> values, const StatOptions& o, Rng& rng,
                             Budget* budget) {
  detail::validate_common(o);
  require(o.bounds.empty(), "bounds does not apply to histogram");
  Communicator& comm = comm_or_single(o.run.comm);
  auto n = static_cast<std::int64_t>(values.size());
  if (comm.size() > 1) {  // ranks (issue 18): every rank passes its own values
    check_agreement(comm, fingerprint_of("histogram", o, 1), "the histogram's options");
    n = allreduce_count(comm, n);
  }
  require(n > 0, "histogram needs at least one value, got none");
  return o.categories.empty() ? selected_categories(values, o, rng, budget, comm)
                              : public_categories(values, o, rng, budget, comm);
}

std::span<const MethodInfo> registry() {
  // Each statistic's own options are those whose declaration names it (src/options.cpp).
  static const std::vector<MethodInfo> table = {
      declared_method("stat", "count", "number of rows (add/remove one row)", {}),
      declared_method("stat", "sum", "per-column sum of values clipped to bounds", {"scale_share"}),
      declared_method("stat", "mean", "per-column mean of values clipped to bounds",
                      {"scale_share"}),
      declared_method("stat", "variance", "per-column variance of values clipped to bounds",
                      {"scale_share"}),
      declared_method("stat", "std", "per-column standard deviation of values clipped to bounds",
                      {"scale_share"}),
      declared_method("stat", "quantiles",
                      "per-column quantiles (several at once) on a grid within bounds",
                      {"scale_share"}),
      declared_method("stat", "histogram",
                      "counts of a categorical column; categories public or selected privately",
                      {}),
  };
  return table;
}

}  // namespace dpstats::stats
