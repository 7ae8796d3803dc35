// Whether a private estimate of a public parameter may be used (issue 27).
// Proof: docs/proofs/scale.md §6. One rule for every estimate the scale layer releases — bounds,
// location, scale, clip, feature scale, feature bound, domain radius, moments clip, fit centring.
//
// A private estimate can fail: its rank error can be comparable to n, its cell can be the end of
// its grid, its spread can be degenerate (most values equal). A release whose plan rests on such
// an estimate is not `ok`: the consumer abstains with `reason()`, which names the cause and what
// would suffice (rows, epsilon, or the public parameter to give). The decision reads released
// values and public inputs only (post-processing: it costs no privacy).
//
// Consumers call `reliability(estimate, option)` on what the scale layer returned and abstain on
// `!usable`; they never re-derive the rule from an estimate's fields.
#pragma once
#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <string_view>

namespace dpstats {

struct ScaleEstimate;     // column_scale.hpp
struct LocationEstimate;  // location.hpp
struct NormQuantile;      // norm_quantile.hpp
struct WinsorizedScale;   // winsorized_scale.hpp

struct Reliability {
  bool usable = true;
  std::string estimate;       // what was estimated: "bounds of column 2", "the feature scale", ...
  std::string cause;          // why it is not usable (public and released values only)
  std::string would_suffice;  // rows, epsilon, or the public option that would make it usable

  static Reliability ok(std::string estimate);
  static Reliability unusable(std::string estimate, std::string cause, std::string would_suffice);
  // "<estimate> is not usable: <cause>; <would_suffice>" (empty when usable): the abstention reason.
  std::string reason() const;
  nlohmann::json json() const;  // {"usable", "estimate", "cause", "would_suffice"}
};

// The first unusable of `parts`, else an ok Reliability named `estimate`.
Reliability first_unusable(std::span<const Reliability> parts, std::string estimate);

// The facts one private selection is judged on, all public or released.
struct SelectionFacts {
  double rank_error = 0;     // t: exceeded with probability <= the estimate's beta
  const char* unit = "rows";  // what n and t count ("users" for a user-level estimate)
  double n = 0;              // rows (public n, or a lower confidence bound of a private count)
  double tolerance = 0.3;    // the largest t / n (+ alpha) the estimate's use tolerates
  double alpha = 0;          // the corrupted fraction the caller declared
  double epsilon = 0;        // the selection's epsilon (for "epsilon >= ..." in would_suffice)
  bool at_grid_end = false;  // the released cell is the first or the last of its grid
  bool degenerate = false;   // the released spread is at or below the resolution
  // One side of a clipping bound (docs/proofs/scale.md §7b), judged when `side`: the noisy count
  // of the rows beyond the anchor's cell on that side (negative when the noise is), its noise
  // bound at the estimate's confidence, and the rows the bound is designed to leave out there
  // (coverage/2 n).
  bool side = false;
  double beyond = 0, beyond_noise = 0, designed_out = 0;
  bool atom = false;  // the noisy counts say the anchor's cell holds most rows (released counts)
};

// The one rule: usable iff the cell is not at the grid's end, the spread is not degenerate and
// t / n + alpha <= tolerance; for a bound's side (`side`) whose anchor's cell may hold
// most rows (atom) also iff the side is resolved (its rows beyond the anchor, low estimate, are at
// least twice what the bound may leave out, designed_out + t) or nearly empty (high estimate at
// most 2 designed_out): otherwise the bound may stop short of all the rows beyond the anchor. `option` names the public parameter that replaces the estimate
// ("--bounds", "--feature-scale", ...), quoted in would_suffice.
Reliability assess(const SelectionFacts& f, std::string estimate, std::string_view option);

// Each estimate of the scale layer, judged by the rule above. `option`: as in assess.
Reliability reliability(const ScaleEstimate& e, std::string_view option);
Reliability reliability(const LocationEstimate& e, std::string_view option);
Reliability reliability(const NormQuantile& e, std::string_view option);
Reliability reliability(const WinsorizedScale& e, std::string_view option);

}  // namespace dpstats
