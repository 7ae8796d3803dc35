// ClippedRows (internal): the robust filters' processed rows -- clipped around the centre onto a
// ball or box in scale units and quantised onto the grid qZ (docs/proofs/mean.md §2) --
// recomputed from the data on the fly instead of stored, so PRIME, PRIME-ht and the private
// filter hold no n x d working copy (issue 21). Row i is
//   z_i = q · round(c_i(u_i − centre) / q),
// u_i the row in scale units (an AffineRows view of the caller's data), c_i its clip: ball, the
// factor r/‖u_i − centre‖ when that norm exceeds r, else 1 (stored: n doubles, 1/d of the data);
// box, the clamp to [−r, r] per coordinate (nothing stored). (When no mapped value reaches the
// view's ±1e150 clamp, the reads skip that clamp: it is then the identity.) Every read evaluates the same
// expressions, in the same order, as the front end's former in-place pass, so each value is bit
// for bit the one the stored copy held and every seeded release is unchanged.
#pragma once
#include <cstdint>
#include <vector>

#include "dpstats/data/affine_rows.hpp"
#include "dpstats/data/matrix.hpp"
#include "dpstats/exact/exact_sum.hpp"

namespace dpstats::mean_detail {

class ClippedRows {
 public:
  ClippedRows() = default;
  // ball: `factor` holds one clip factor per row of `units` (1 for a row inside the ball); box:
  // `factor` is empty. q is a power of two. within_bound: every mapped value of `units` lies
  // strictly inside ±units.bound(), so its clamp never binds and the reads skip it (same values).
  ClippedRows(AffineRows units, Vector centre, bool ball, double radius, double q,
              std::vector<double> factor, bool within_bound = false);

  Eigen::Index rows() const { return units_.rows(); }
  Eigen::Index cols() const { return units_.cols(); }

  // Row i into out[0, cols()); returns out.
  const double* row(Eigen::Index i, double* out) const {
    return within_bound_ ? row_as<false>(i, out) : row_as<true>(i, out);
  }
  Vector row(Eigen::Index i) const {
    Vector v(cols());
    row(i, v.data());
    return v;
  }
  double at(Eigen::Index i, Eigen::Index j) const {
    const double v = units_.at(i, j) - centre_[j];
    return grid(ball_ ? v * factor_[static_cast<std::size_t>(i)]
                      : std::clamp(v, -radius_, radius_));
  }
  // Rows idx[b], ..., idx[e − 1] (rows b, ..., e − 1 when idx is null) into out, row after row
  // (e − b rows of cols() doubles): the kernels' blocks.
  void rows_into(const std::uint32_t* idx, std::int64_t b, std::int64_t e, double* out) const;
  // The whole processed matrix (the test trace's `processed`).
  RowMatrix materialise() const;

 private:
  template <bool clamp>
  const double* row_as(Eigen::Index i, double* out) const {
    const double* x = units_.source_row(i);
    const double* cen = centre_.data();
    const Eigen::Index d = cols();
    const auto u = [&](Eigen::Index j) { return clamp ? units_.map(j, x[j]) : units_.affine(j, x[j]); };
    if (ball_) {
      const double f = factor_[static_cast<std::size_t>(i)];
      for (Eigen::Index j = 0; j < d; ++j) out[j] = grid((u(j) - cen[j]) * f);
    } else {
      for (Eigen::Index j = 0; j < d; ++j) out[j] = grid(std::clamp(u(j) - cen[j], -radius_, radius_));
    }
    return out;
  }
  // The grid value of a clipped coordinate (the exact sum's rounding: ties to even).
  double grid(double v) const { return exact::nearest(v * inv_q_) * q_; }

  AffineRows units_;
  Vector centre_;
  bool ball_ = true, within_bound_ = false;
  double radius_ = 0, q_ = 0, inv_q_ = 0;
  std::vector<double> factor_;
};

}  // namespace dpstats::mean_detail
