// A release's plan without spending (dry_run.hpp).
#include "dpstats/dry_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "dpstats/error.hpp"
#include "dpstats/release.hpp"

namespace dpstats {
namespace {

thread_local DryRun* open_run = nullptr;

bool same(const PlannedCheck& a, const PlannedCheck& b) {
  return a.estimate == b.estimate && a.facts.rank_error == b.facts.rank_error &&
         a.facts.tolerance == b.facts.tolerance && a.facts.alpha == b.facts.alpha &&
         a.margin == b.margin;
}

nlohmann::json spend_json(const Budget& b) {
  const PrivacyLoss ed = b.spent_epsilon_delta();
  nlohmann::json j = {{"epsilon", ed.epsilon}, {"delta", ed.delta},
                      {"accountant", to_string(b.accountant())}};
  if (b.total().kind == LossKind::zcdp) j["rho"] = b.spent().rho;
  return j;
}

std::string rows_text(double rows) {
  return std::isfinite(rows) ? fmt::format("{:.0f}", rows) : std::string("no number of");
}

}  // namespace

double PlannedCheck::rows() const { return std::ceil(rows_needed(facts) + margin); }

DryRun::DryRun() {
  if (open_run) throw std::logic_error("a dry run is already open on this thread");
  open_run = this;
}

DryRun::~DryRun() { close(); }

void DryRun::close() {
  if (open_run == this) open_run = nullptr;
}

bool dry_run_active() { return open_run != nullptr; }

void note_planned_check(PlannedCheck check) {
  if (!open_run || open_run->quiet_ > 0 ||
      std::ranges::find(open_run->settled_, check.estimate) != open_run->settled_.end())
    return;
  for (const PlannedCheck& c : open_run->checks_)
    if (same(c, check)) return;
  open_run->checks_.push_back(std::move(check));
}

void note_checks_quietly(const std::function<void()>& f) {
  if (!open_run) return f();
  DryRun& run = *open_run;
  ++run.quiet_;
  try {
    f();
  } catch (...) {
    --run.quiet_;
    throw;
  }
  --run.quiet_;
}

void note_checks_settled(const std::function<void()>& f) {
  if (!open_run) return f();
  const std::size_t before = open_run->checks_.size();
  f();
  for (std::size_t i = before; i < open_run->checks_.size(); ++i)
    open_run->settled_.push_back(open_run->checks_[i].estimate);
}

void dry_run_stop(const Ledger& plan, std::optional<Budget> spend) {
  if (!open_run) throw std::logic_error("dry_run_stop outside a dry run");
  open_run->stopped_ = true;
  std::erase_if(open_run->checks_, [&plan](const PlannedCheck& c) {
    return std::none_of(plan.begin(), plan.end(), [&c](const LedgerEntry& e) {
      return e.purpose.find(c.purpose) != std::string::npos;
    });
  });
  open_run->plan_ = plan;
  open_run->spend_ = std::move(spend);
  throw DryRunStop{};
}

void dry_run_abstained(const std::string& reason) {
  if (!open_run) throw std::logic_error("dry_run_abstained outside a dry run");
  open_run->stopped_ = true;
  open_run->abstained_ = reason;
  throw DryRunStop{};
}

std::uint64_t NoDrawRng::next_u64() {
  throw std::logic_error("a dry run drew random bits: every release must charge before it draws");
}

nlohmann::json DryRun::json(std::optional<std::int64_t> n_hint, const std::string& remedy) const {
  nlohmann::json checks = nlohmann::json::array();
  double most = 0;
  std::string worst;
  for (const PlannedCheck& c : checks_) {
    const double rows = c.rows();
    nlohmann::json j = {{"estimate", c.estimate}, {"rank_error", c.facts.rank_error},
                        {"tolerance", c.facts.tolerance}, {"alpha", c.facts.alpha},
                        {"epsilon", c.facts.epsilon}, {"rows_needed", rows}};
    if (c.margin > 0) j["count_margin"] = c.margin;
    if (n_hint) j["usable"] = static_cast<double>(*n_hint) >= rows;
    checks.push_back(std::move(j));
    if (!(rows <= most)) {
      most = rows;
      worst = c.estimate;
    }
  }
  nlohmann::json out = {{"n_hint", n_hint ? nlohmann::json(*n_hint) : nlohmann::json(nullptr)},
                        {"private", spend_.has_value()},
                        {"stages", ledger_json(plan_)},
                        {"checks", checks}};
  out["spends"] = spend_ ? spend_json(*spend_) : nlohmann::json(nullptr);
  out["rows_needed"] = checks_.empty() ? nlohmann::json(nullptr) : nlohmann::json(most);
  const std::string give = remedy.empty() ? "" : fmt::format("give {}, or ", remedy);
  if (abstained_) {  // its own plan-time rule decided; the reason names what would suffice
    out["private"] = true;
    out["rows_needed"] = nullptr;
    out["verdict"] = "would abstain before spending anything: " + *abstained_;
  } else if (checks_.empty()) {
    out["verdict"] = "would release: no planned estimate depends on the number of rows";
  } else if (!n_hint) {
    out["verdict"] = fmt::format("needs >= {} rows at this epsilon ({}); give --n-hint N "
                                 "(Python: n_hint=) for a verdict", rows_text(most), worst);
  } else if (static_cast<double>(*n_hint) >= most) {
    out["verdict"] = "would release";
  } else {
    const double factor = most / std::max<double>(static_cast<double>(*n_hint), 1);
    out["verdict"] = fmt::format(
        "would abstain: {} needs >= {} rows at this epsilon, {} declared ({}about {:.2g} times "
        "this epsilon)", worst, rows_text(most), *n_hint, give, factor);
  }
  out["caveat"] = "a verdict judges the rank errors, which follow from public values; an "
                  "estimate whose released cell is at its grid's end or whose spread is "
                  "degenerate (data, not seen here) still abstains";
  return out;
}

}  // namespace dpstats
