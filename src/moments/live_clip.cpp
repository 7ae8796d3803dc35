// The live stream's adaptive clip (detail.hpp; docs/proofs/moments.md §4.2): a private warm-up
// quantile of the first block's row norms, then Andrew et al. (2021)'s running quantile
// (scale/adaptive_clip.hpp), one update per public block.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "detail.hpp"
#include "dpstats/error.hpp"
#include "dpstats/scale/grid_quantile.hpp"

namespace dpstats::moments::detail {
namespace {

// The clip range of the stream (the fixed-clip path's, check_config).
double clamp_clip(double c) { return std::clamp(c, 0x1p-400, 0x1p400); }

// A block is long enough when the warm-up quantile's rank error t (exceeded w.p. <= beta) is at
// most 2/3 of the room the scale layer's check leaves: t / B + alpha <= min(q, 1 - q) with a
// margin, so that a block's quantile is trusted (the scale layer abstains otherwise).
std::size_t auto_block(const NormQuantileOptions& q, double rank_error) {
  const double room = std::min(q.q, 1 - q.q) - q.alpha;
  return static_cast<std::size_t>(std::ceil(1.5 * rank_error / room));
}

}  // namespace

LiveClipPlan plan_live_clip(const MomentsConfig& c, double scale_rho) {
  LiveClipPlan p;
  p.rho_quantile = p.rho_count = scale_rho / 2;
  p.quantile.loss = PrivacyLoss::zcdp(p.rho_quantile);
  p.quantile.q = c.clip_quantile;
  // Stream positions are public: a neighbouring stream (replace-one, or a row removed, i.e. 0)
  // changes one value of one block's B norms, so B is public and the count sensitivity is 1.
  p.quantile.neighbouring = Neighbouring::replace_one;
  const double eps_q = std::sqrt(2 * p.rho_quantile);
  p.rank_error = grid_quantile_rank_error(eps_q, log_grid(p.quantile.per_octave, true).size(),
                                          p.quantile.beta);
  p.block = c.clip_block != 0 ? c.clip_block : auto_block(p.quantile, p.rank_error);
  p.blocks = (c.steps + p.block - 1) / p.block;
  require(c.steps >= 2 * p.block,
          "clip is required for a live stream shorter than two adaptive-clip blocks: without "
          "--clip the stream learns its clip privately from blocks of {} rows (the first block "
          "enters as 0), and steps = {} < {}. Give --clip (the l2 norm bound of one row in the "
          "data's units), a larger budget or scale_share, a smaller clip_block, or the whole "
          "table (a file: estimate_moments)",
          p.block, c.steps, 2 * p.block);
  p.count.target_quantile = c.clip_quantile;
  p.count.rho_per_step = p.rho_count;
  p.count.noise = c.run.noise;
  // Blocks are disjoint (each row is in one block): each family composes in parallel, at the
  // loss of one block's mechanisms.
  p.warm_up.emplace(private_norm_quantile_entries(p.quantile).back().loss, Accountant::zcdp,
                    "live clip: private quantile of a warm-up block's row norms (disjoint "
                    "blocks: parallel composition)");
  p.counts.emplace(AdaptiveClip(p.count).step_entry().loss, Accountant::zcdp,
                   fmt::format("live clip: noisy count of a block's norms below the tracked "
                               "quantile (up to {} blocks of {} rows, disjoint: parallel "
                               "composition)",
                               p.blocks, p.block));
  p.ledger = {p.warm_up->planned(), p.counts->planned()};
  return p;
}

void LiveClip::record(double norm, Rng& rng) {
  norms_.push_back(norm);
  if (norms_.size() < plan_.block) return;
  if (tracker_) {
    plan_.counts->add_block({tracker_->step_entry()});  // before the count draws
    tracker_->update_prepaid(norms_, static_cast<double>(norms_.size()), rng);
    clip_ = clamp_clip(margin_ * tracker_->clip());
  } else {
    warm_up(rng);
  }
  norms_.clear();
  ++blocks_done_;
}

// The plan charged the warm-up composite on the release's account; each warm-up block's
// selection is added to it before it draws, and runs on an account of exactly that block's
// entries (a later warm-up block is disjoint from the earlier).
void LiveClip::warm_up(Rng& rng) {
  ++warm_up_blocks_;
  const Ledger block = private_norm_quantile_entries(plan_.quantile);
  plan_.warm_up->add_block(block);
  ReleaseBudget scratch(plan_.quantile.loss, Accountant::zcdp);
  scratch.charge(block);
  const NormQuantile q = private_value_quantile(norms_, plan_.quantile, scratch, rng);
  if (q.status != ScaleStatus::ok || !(q.value > 0)) {
    warm_up_failures_.push_back(fmt::format("block {}: {}", blocks_done_ + 1, q.reason));
    return;
  }
  AdaptiveClipOptions o = plan_.count;
  o.initial_clip = q.value;
  tracker_.emplace(o);
  const std::size_t left = plan_.blocks - blocks_done_;
  ReleaseBudget counts(PrivacyLoss::zcdp(plan_.rho_count * static_cast<double>(left)),
                       Accountant::zcdp);
  tracker_->prepay(left, counts);
  clip_ = clamp_clip(margin_ * q.value);
}

Ledger LiveClip::ran() const {
  Ledger l;
  for (const ParallelComposite* c : {&*plan_.warm_up, &*plan_.counts})
    if (c->blocks() > 0) l.push_back(c->entry());
  return l;
}

nlohmann::json LiveClip::diagnostics() const {
  nlohmann::json j = {{"block", plan_.block},
                      {"blocks", plan_.blocks},
                      {"blocks_done", blocks_done_},
                      {"warm_up_blocks", warm_up_blocks_},
                      {"margin", margin_},
                      {"quantile", plan_.quantile.q},
                      {"rho_quantile", plan_.rho_quantile},
                      {"rho_count", plan_.rho_count},
                      {"warm_up_rank_error", plan_.rank_error}};
  if (tracker_) j["tracker"] = tracker_->diagnostics();
  if (!warm_up_failures_.empty()) j["warm_up_failures"] = warm_up_failures_;
  return j;
}

}  // namespace dpstats::moments::detail
