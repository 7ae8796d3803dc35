// Private clip for the practical profile's final clipped-GD phase (docs/results/heavy-tailed.md
// "Private clip"; issue 8 gap 1). The card's noisy-GD clip C = G_k(mε/d)^{1/(2k)} (docs/proofs/heavy-tailed.md §3) is the
// level that a distribution with E‖∇f‖^k = G_k^k exceeds with probability at most
// p = sqrt(d/(mε)) (Markov); it uses only the worst-case moment bound. Here the same tail level is
// read off the data instead: the clip is the (1 − p)-quantile of the per-record gradient norms
// ‖∇f(w; z_i)‖ = |φ'(⟨a_i, w⟩, y_i)|·‖a_i‖ at the public point w (the previous phase's released
// output), with p = c_p·sqrt(d/(mε)) (c_p fixed on public samples by `repro heavy-tailed-tune`),
// released by the exact exponential mechanism (private_quantile: permute-and-flip, rank quality,
// sensitivity 1) on a public log-spaced grid, at a stated share of the final block's ε. Pure ε-DP;
// basic composition with the GD steps inside the block, parallel composition across blocks.
#pragma once
#include <cstdint>

#include "dpstats/data/matrix.hpp"
#include "dpstats/heavy_tailed/lipschitz_extension.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

struct GradientNormQuantile {
  double tail = 0.1;            // p: the clip is about the (1 − p)-quantile of the norms
  double epsilon = 0.1;         // spent on this release (pure DP)
  double lower = 0, upper = 1;  // public grid range (0 < lower < upper); norms are clamped to it
  std::size_t candidates = 256; // log-spaced grid points
};

// p = min(1/2, c_p·sqrt(d/(mε))) (the docs/proofs/heavy-tailed.md §3 clip's Markov tail, times c_p).
double clip_tail_fraction(std::int64_t m, std::int64_t d, double epsilon, double c_p);

// Public grid for block size m: [G_2/256, 2·G_k(mε/d)^{1/k}]. Under the public moment bound the
// (1 − p)-quantile lies below G_k(mε/d)^{1/k} whenever p >= d/(mε) (Markov).
GradientNormQuantile gradient_norm_grid(std::int64_t m, std::int64_t d, double epsilon, double G_k,
                                        double k, double G_2);

struct PrivateClip {
  double clip = 0;
  LedgerEntry entry;  // = gradient_norm_clip_entry(q)
};

// The entry of the clip's selection (its epsilon; the grid does not enter it).
LedgerEntry gradient_norm_clip_entry(const GradientNormQuantile& q);

// The released clip from rows [begin, begin + m) at w (w must be public: a released value).
PrivateClip private_gradient_norm_clip(const RowMatrix& X, const Vector& y, std::int64_t begin,
                                       std::int64_t m, const GlmEnvelope& env, const Vector& w,
                                       const GradientNormQuantile& q, Rng& rng);

}  // namespace dpstats::optimize
