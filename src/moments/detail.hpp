// Internals of the moments driver shared by the streaming estimator (estimator.cpp) and the batch
// API (batch.cpp). Not installed; not part of the public API.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dpstats/moments/estimator.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/scale/adaptive_clip.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::moments::detail {

// The PP methods (their second moment squares the released first moment).
inline bool is_pp(Method m) { return m == Method::pp || m == Method::pp_debiased; }

// validate: every option; `batch` (estimate_moments) accepts a missing clip.
void validate_config(const MomentsConfig& c, bool batch);
// The release's own account (target and accountant). `pre_rho`: the zCDP spent before the stream,
// counted in the target of a noise-multiplier budget (an epsilon or rho target includes it).
ReleaseBudget release_account(const MomentsConfig& c, const MomentsPlan& p, Budget* caller,
                              double pre_rho);
// ||x||_2 after checking every value is finite (InvalidArgument naming step otherwise).
double row_norm(std::span<const double> x, std::size_t step);
// The zCDP spent before (or beside) the stream: `share` of the whole (for a noise multiplier, whose
// stream cost is fixed, share / (1 - share) of the stream's).
double pre_stream_rho(const MomentsConfig& c, const MomentsPlan& stream, double share);

// The live stream's adaptive clip (docs/proofs/moments.md §4.2), planned from public values: the
// stream is cut into public blocks of `block` rows; the clip of block k is a function of the
// private outputs of blocks < k only. Until a clip exists (the warm-up) a row enters the stream as
// 0; at the end of each warm-up block a private quantile of its norms (log grid, rho_quantile)
// starts the clip; afterwards each block's noisy count of norms below the tracked quantile
// (AdaptiveClip, rho_count) moves it. The clip is clip_margin x the tracked quantile. Blocks are
// disjoint, so each row enters exactly one scale mechanism: both entries are charged once.
struct LiveClipPlan {
  std::size_t block = 0, blocks = 0;
  double rho_quantile = 0, rho_count = 0, rank_error = 0;
  NormQuantileOptions quantile;
  AdaptiveClipOptions count;
  // The warm-up quantiles and the block counts: each a parallel composite over the disjoint
  // blocks it ran on (planned: reserved; the LiveClip adds each block before it draws).
  std::optional<ParallelComposite> warm_up, counts;
  Ledger ledger;  // warm_up and counts planned
};
// `scale_rho`: the zCDP the scale mechanisms share (half each).
LiveClipPlan plan_live_clip(const MomentsConfig& c, double scale_rho);

class LiveClip {
 public:
  explicit LiveClip(LiveClipPlan plan, double margin) : plan_(std::move(plan)), margin_(margin) {}
  double clip() const { return clip_; }  // data units, for the next row; 0 in the warm-up
  std::size_t block() const { return plan_.block; }
  // Records the next row's norm; at a block's end moves the clip (draws the block's noise).
  void record(double norm, Rng& rng);
  nlohmann::json diagnostics() const;
  // The composites with the blocks that drew so far (each claims its planned place).
  Ledger ran() const;

 private:
  void warm_up(Rng& rng);
  LiveClipPlan plan_;
  double margin_, clip_ = 0;
  std::vector<double> norms_;
  std::optional<AdaptiveClip> tracker_;
  std::size_t blocks_done_ = 0, warm_up_blocks_ = 0;
  std::vector<std::string> warm_up_failures_;
};

}  // namespace dpstats::moments::detail
