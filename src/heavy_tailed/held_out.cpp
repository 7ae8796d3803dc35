// fit_heavy_tailed's held-out records and the held-out loss statement.
#include "dpstats/heavy_tailed/heavy_tailed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/solvers/adaptive_subgradient.hpp"
#include "dpstats/heavy_tailed/certificate.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_clip.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_lens.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/geometry/ball.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/solvers/standardize.hpp"

#include "heavy_tailed_internal.hpp"

namespace dpstats::optimize::heavy_tailed_detail {

HeldRows hold_out_rows(const ConstMatrixRef& X, const Vector& y, const HeavyTailedOptions& o,
                       Rng& rng) {
  HeldRows h;
  if (!o.holdout) return h;
  h.active = true;
  // Exactly round(f n) records held out (n public under replace-one): both counts are public.
  const HoldoutSplit::Rows split = HoldoutSplit(*o.holdout, rng, o.run.comm)
                                       .exact_rows(X, [&y](Eigen::Index i) { return y[i]; },
                                                   o.run.comm);
  auto take = [&](const std::vector<Eigen::Index>& rows, RowMatrix& A, Vector& b) {
    A.resize(static_cast<Eigen::Index>(rows.size()), X.cols());
    b.resize(static_cast<Eigen::Index>(rows.size()));
    for (std::size_t k = 0; k < rows.size(); ++k) {
      A.row(static_cast<Eigen::Index>(k)) = X.row(rows[k]);
      b[static_cast<Eigen::Index>(k)] = y[rows[k]];
    }
  };
  take(split.keep, h.train_X, h.train_y);
  take(split.held, h.held_X, h.held_y);
  return h;
}

// Each held-out record's loss of the released model x . w (+ b, when centred) in the user's
// units, released by `mechanism` (non-private: the exact mean of the clipped losses).
nlohmann::json held_out_loss(const HeldRows& split, const Vector& w, const HeavyTailedOptions& o,
                             const GlmEnvelope& env, const std::optional<HoldoutLoss>& mechanism,
                             Rng& rng) {
  const Eigen::Index d = split.held_X.cols();
  const double b = w.size() > d ? w[d] : 0.0;
  std::vector<double> losses(static_cast<std::size_t>(split.held_X.rows()));
  for (Eigen::Index i = 0; i < split.held_X.rows(); ++i)
    losses[static_cast<std::size_t>(i)] = env.phi(split.held_X.row(i).dot(w.head(d)) + b,
                                                  split.held_y[i]);
  nlohmann::json j;
  if (mechanism) {  // the held-out count is public: exactly round(f n) records (hold_out_rows)
    j = mechanism->release(losses, rng, o.run.comm);
  } else {
    double sum = 0;
    for (double v : losses) sum += std::clamp(v, 0.0, o.holdout_loss_bound);
    j = {{"units", losses.size()}, {"loss_bound", o.holdout_loss_bound}, {"private", false},
         {"loss", losses.empty() ? nlohmann::json(nullptr) : nlohmann::json(sum / losses.size())}};
  }
  j.update({{"fraction", *o.holdout}, {"unit", "record"},
            {"loss_name", fmt::format("the record's {} loss of the released model (the user's "
                                      "units), clipped to loss_bound", name_of(o.loss))}});
  return j;
}

}  // namespace dpstats::optimize::heavy_tailed_detail
