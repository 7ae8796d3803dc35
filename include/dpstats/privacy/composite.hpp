// Composites: ledger entries whose loss follows from the entries of the mechanisms they ran
// (their `blocks`), never written by hand (docs/proofs/substrate.md §12). Each has a planned form
// (reserved: charged with the release's plan, before the stage runs) and a filled form (the
// entries the stage's mechanisms presented before they drew), which claims the planned one
// (ReleaseBudget::claim: the same mechanism name, loss and count).
//
//  * ParallelComposite: mechanisms on disjoint parts of the data (blocks of rows, users, phases
//    on their own records) cost the worst block's loss (McSherry 2009); each block is checked to
//    compose within the per-block loss when it is added, before it draws.
//  * stage_entry: a stage whose mechanisms (their number or scale) follow from an earlier stage's
//    release: its planned maximum, and the entries it ran, which compose within it (checked by
//    the Budget of that maximum the stage spent into before each draw).
//  * zcdp_stage_entry: the same for a stage accounted in zCDP inside a release counted by basic
//    composition: its entries compose within rho, which converts to (epsilon, delta) (CKS20).
//  * group_privacy_entry: an item-level zCDP entry is (k^2 rho)-zCDP for groups of k items (Bun &
//    Steinke 2016 Prop. 1.9), e.g. a user's m items.
//  * proved_entry: the entries of a paper's algorithm with the loss a cited theorem proves for
//    them together (the paper profiles: e.g. a test whose coupling the theorem charges).
//  * optimal_composition_entry: k mechanisms, each at most (epsilon, delta)-DP, composed by the
//    optimal composition theorem (Kairouz, Oh & Viswanath 2015; best_composition).
//  * release_entry: a whole release as one (epsilon, delta) entry, for a caller's Budget whose
//    accountant cannot count the release's own entries.
#pragma once
#include <string>
#include <vector>

#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/ledger.hpp"

namespace dpstats {

inline constexpr const char* kParallelComposition = "parallel_composition";

class ParallelComposite {
 public:
  // Every block may spend `per_block`, counted by `accountant` (a pure bound under zcdp counts
  // as its epsilon^2/2).
  ParallelComposite(PrivacyLoss per_block, Accountant accountant, std::string purpose);
  LedgerEntry planned() const;  // reserved until entry() claims its place
  // The entries of the mechanisms about to draw on the next disjoint block; a std::logic_error,
  // with nothing added, unless they compose within the per-block loss.
  void add_block(Ledger entries);
  // More entries on the last block (a later mechanism of the same block, built from an earlier
  // one's release), checked the same way.
  void extend_block(const Ledger& entries);
  LedgerEntry entry() const;  // the composite with the blocks added so far
  std::size_t blocks() const { return blocks_.size(); }

 private:
  PrivacyLoss per_block_;
  Accountant accountant_;
  std::string purpose_;
  std::vector<Ledger> blocks_;
};

LedgerEntry stage_entry(const PrivacyLoss& maximum, std::string purpose);
// `ran`: the Budget (total: the planned maximum) the stage's mechanisms spent into.
LedgerEntry stage_entry(const Budget& ran, std::string purpose);

LedgerEntry zcdp_stage_entry(double epsilon, double delta, std::string purpose);
// A std::logic_error unless `parts` compose within the stage's rho.
LedgerEntry zcdp_stage_entry(double epsilon, double delta, std::string purpose, Ledger parts);

// Group privacy over `group_size` items of an item-level (pure) zCDP entry: loss
// zcdp(group_size^2 rho), the item-level entry as its one block (reserved when it is).
LedgerEntry group_privacy_entry(const LedgerEntry& item_level, int group_size);

// The loss `theorem` proves for a paper algorithm's mechanisms, planned (no parts) or with the
// entries they presented.
LedgerEntry proved_entry(const PrivacyLoss& loss, const std::string& theorem, std::string purpose);
LedgerEntry proved_entry(const PrivacyLoss& loss, const std::string& theorem, std::string purpose,
                         Ledger parts);

// `parts`: the entries of the mechanisms composed (each a std::logic_error unless within
// (epsilon, delta)); `k` calls in all, composed at an extra delta_slack.
LedgerEntry optimal_composition_entry(std::string purpose, double epsilon, double delta, long k,
                                      double delta_slack, Ledger parts);

// `spent`: the release's own (epsilon, delta) (its Budget's spent_epsilon_delta).
LedgerEntry release_entry(const PrivacyLoss& spent);

}  // namespace dpstats
