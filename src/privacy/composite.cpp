#include "dpstats/privacy/composite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "dpstats/error.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"

namespace dpstats {
namespace {

// Whether `block` composes, by `accountant`, within `bound`.
bool composes_within(const Ledger& block, const PrivacyLoss& bound, Accountant accountant) {
  const bool pure_in_zcdp = accountant == Accountant::zcdp && bound.kind == LossKind::pure;
  Budget b(pure_in_zcdp ? PrivacyLoss::zcdp(bound.epsilon * bound.epsilon / 2) : bound,
           accountant);
  try {
    for (LedgerEntry e : block) {
      e.reserved = false;
      e.blocks.clear();
      b.spend(e);
    }
  } catch (const InvalidArgument&) {  // BudgetExceeded, or a kind the accountant cannot count
    return false;
  }
  return true;
}

LedgerEntry composite(const char* mechanism, std::string purpose, const PrivacyLoss& loss) {
  LedgerEntry e;
  e.mechanism = mechanism;
  e.purpose = std::move(purpose);
  e.loss = loss;
  e.reserved = true;
  return e;
}

LedgerEntry filled(LedgerEntry planned, Ledger parts) {
  planned.reserved = false;
  planned.blocks = {std::move(parts)};
  return planned;
}

}  // namespace

ParallelComposite::ParallelComposite(PrivacyLoss per_block, Accountant accountant,
                                     std::string purpose)
    : per_block_(per_block), accountant_(accountant), purpose_(std::move(purpose)) {}

LedgerEntry ParallelComposite::planned() const {
  return composite(kParallelComposition, purpose_, per_block_);
}

void ParallelComposite::add_block(Ledger entries) {
  if (!composes_within(entries, per_block_, accountant_)) {
    throw std::logic_error(fmt::format("parallel composite '{}': a block would spend more than {}",
                                       purpose_, per_block_.describe()));
  }
  blocks_.push_back(std::move(entries));
}

void ParallelComposite::extend_block(const Ledger& entries) {
  if (blocks_.empty()) throw std::logic_error("parallel composite '" + purpose_ + "': no block yet");
  Ledger block = blocks_.back();
  block.insert(block.end(), entries.begin(), entries.end());
  if (!composes_within(block, per_block_, accountant_)) {
    throw std::logic_error(fmt::format("parallel composite '{}': a block would spend more than {}",
                                       purpose_, per_block_.describe()));
  }
  blocks_.back() = std::move(block);
}

LedgerEntry ParallelComposite::entry() const {
  LedgerEntry e = planned();
  e.reserved = blocks_.empty();
  e.blocks = blocks_;
  return e;
}

LedgerEntry stage_entry(const PrivacyLoss& maximum, std::string purpose) {
  return composite("stage", std::move(purpose), maximum);
}

LedgerEntry stage_entry(const Budget& ran, std::string purpose) {
  return filled(stage_entry(ran.total(), std::move(purpose)), ran.ledger());
}

LedgerEntry zcdp_stage_entry(double epsilon, double delta, std::string purpose) {
  const double rho = epsilon_delta_to_zcdp(epsilon, delta);
  return composite("zcdp_stage", fmt::format("{} (rho = {:.6g}, converted)", purpose, rho),
                   PrivacyLoss::approximate(epsilon, delta));
}

LedgerEntry zcdp_stage_entry(double epsilon, double delta, std::string purpose, Ledger parts) {
  LedgerEntry e = zcdp_stage_entry(epsilon, delta, std::move(purpose));
  if (!composes_within(parts, PrivacyLoss::zcdp(epsilon_delta_to_zcdp(epsilon, delta)),
                       Accountant::zcdp))
    throw std::logic_error("zcdp stage '" + e.purpose + "': its entries spend more than rho");
  return filled(std::move(e), std::move(parts));
}

LedgerEntry group_privacy_entry(const LedgerEntry& item_level, int group_size) {
  require(group_size >= 1, "group_size must be >= 1, got {}", group_size);
  if (item_level.loss.kind != LossKind::zcdp || item_level.loss.delta != 0)
    throw std::logic_error("group privacy is implemented for (pure) zCDP entries only");
  const double k = group_size;
  LedgerEntry e = composite("group_privacy",
                            fmt::format("groups of {} items: {}", group_size, item_level.purpose),
                            PrivacyLoss::zcdp(k * k * item_level.loss.rho));
  e.reserved = item_level.reserved;
  e.blocks = {Ledger{item_level}};
  return e;
}

LedgerEntry optimal_composition_entry(std::string purpose, double epsilon, double delta, long k,
                                      double delta_slack, Ledger parts) {
  for (const auto& e : parts) {
    const bool within = (e.loss.kind == LossKind::pure && e.loss.epsilon <= epsilon) ||
                        (e.loss.kind == LossKind::approximate && e.loss.epsilon <= epsilon &&
                         e.loss.delta <= delta);
    if (!within)
      throw std::logic_error("optimal composition '" + purpose + "': a part exceeds the bound");
  }
  const EpsilonDelta total = best_composition(epsilon, delta, k, delta_slack);
  LedgerEntry c = composite("composition", std::move(purpose),
                            PrivacyLoss::approximate(total.epsilon, total.delta));
  return filled(std::move(c), std::move(parts));
}

LedgerEntry release_entry(const PrivacyLoss& spent) {
  LedgerEntry e;
  e.mechanism = "release";
  e.purpose = "one release, composed by its own accountant";
  e.loss = PrivacyLoss::approximate(spent.epsilon, std::min(1.0, spent.delta));
  return e;
}

LedgerEntry proved_entry(const PrivacyLoss& loss, const std::string& theorem,
                         std::string purpose) {
  return composite("proved", std::move(purpose) + " (" + theorem + ")", loss);
}

LedgerEntry proved_entry(const PrivacyLoss& loss, const std::string& theorem, std::string purpose,
                         Ledger parts) {
  return filled(proved_entry(loss, theorem, std::move(purpose)), std::move(parts));
}

}  // namespace dpstats
