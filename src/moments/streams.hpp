// Internal: the streaming estimator's channels (C·Y and C^{-1}·W per block of coordinates) and the
// Q-diagonal stream, used by estimator.cpp.
#pragma once
#include "dpstats/moments/estimator.hpp"
#include "blt.hpp"
#include "detail.hpp"
#include "dpstats/moments/theory.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/neighbouring_names.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::moments::detail {

using Index = Eigen::Index;

// One block of coordinates sharing a strategy C: computes row t of C·Y from the inputs, and row t
// of C^{-1}·W from the released rows, in O(history · dim) per step. Each call works on the
// coordinates [b, e) of dim-long rows, so disjoint ranges may run on different threads; advance()
// once all of them have.
class Channel {
 public:
  Channel(const Factorization& C, std::size_t dim, bool need_inverse)
      : C_(C), need_inverse_(need_inverse) {
    const auto D = static_cast<Index>(dim);
    if (C.kind() == FactorizationKind::output) {
      out_state_.emplace(*C.workload(), dim);
      if (need_inverse) {
        a_ = C.workload()->coefficients(C.steps());
        hist_v_ = RowMatrix::Zero(static_cast<Index>(C.steps()), D);
      }
    } else if (C.kind() == FactorizationKind::blt) {
      const auto m = static_cast<Index>(C.theta().size());
      buf_s_ = RowMatrix::Zero(m, D);
      buf_r_ = RowMatrix::Zero(m, D);
      y_prev_ = v_prev_ = Vector::Zero(D);
    } else if (C.kind() != FactorizationKind::input) {
      cap_ = C.coefficients().size() - 1;
      if (cap_ > 0) {
        hist_y_ = RowMatrix::Zero(static_cast<Index>(cap_), D);
        hist_v_ = RowMatrix::Zero(static_cast<Index>(cap_), D);
      }
    }
    p_ = Vector::Zero(D);
  }

  // Writes (C Y)_t for the input row y_t, on [b, e).
  void transform(const double* y, double* cy, Index b, Index e) {
    const Index len = e - b;
    Eigen::Map<const Vector> yt(y + b, len);
    Eigen::Map<Vector> out(cy + b, len);
    switch (C_.kind()) {
      case FactorizationKind::input: out = yt; return;
      case FactorizationKind::output:
        out_state_->push(y, cy, static_cast<std::size_t>(b), static_cast<std::size_t>(e));
        return;
      case FactorizationKind::blt: {
        // s_i <- theta_i s_i + y_{t-1};  (C y)_t = kappa (y_t + sum_i omega_i s_i).
        out = yt;
        for (Index i = 0; i < buf_s_.rows(); ++i) {
          const auto k = static_cast<std::size_t>(i);
          auto s = buf_s_.row(i).segment(b, len);
          s = C_.theta()[k] * s + y_prev_.segment(b, len).transpose();
          out += C_.omega()[k] * s.transpose();
        }
        out *= C_.kappa();
        y_prev_.segment(b, len) = yt;
        return;
      }
      default: {
        const auto& c = C_.coefficients();
        out = c[0] * yt;
        const std::size_t top = std::min(t_, cap_);
        for (std::size_t j = 1; j <= top; ++j)
          out += c[j] * hist_y_.row(static_cast<Index>((t_ - j) % cap_)).segment(b, len).transpose();
        if (cap_ > 0) hist_y_.row(static_cast<Index>(t_ % cap_)).segment(b, len) = yt.transpose();
      }
    }
  }

  // Writes v_t = (C^{-1} W)_t for the released row w_t, on [b, e).
  void invert(const double* w, double* v, Index b, Index e) {
    const Index len = e - b;
    Eigen::Map<const Vector> wt(w + b, len);
    Eigen::Map<Vector> out(v + b, len);
    auto p = p_.segment(b, len);
    switch (C_.kind()) {
      case FactorizationKind::input: out = wt; break;
      case FactorizationKind::output: {
        require(need_inverse_, "internal: output factorization inverted without history");
        // C = D T(a): v = T(a)^{-1} D^{-1} w by forward substitution over the full history.
        p = wt / C_.workload()->row_scale(t_);
        for (std::size_t j = 1; j <= t_; ++j)
          if (a_[j] != 0)
            p -= a_[j] * hist_v_.row(static_cast<Index>(t_ - j)).segment(b, len).transpose();
        out = p / a_[0];
        hist_v_.row(static_cast<Index>(t_)).segment(b, len) = out.transpose();
        break;
      }
      case FactorizationKind::blt: {
        // r_i <- theta_i r_i + v_{t-1};  v_t = w_t / kappa - sum_i omega_i r_i.
        p = wt / C_.kappa();
        for (Index i = 0; i < buf_r_.rows(); ++i) {
          const auto k = static_cast<std::size_t>(i);
          auto r = buf_r_.row(i).segment(b, len);
          r = C_.theta()[k] * r + v_prev_.segment(b, len).transpose();
          p -= C_.omega()[k] * r.transpose();
        }
        out = p;
        v_prev_.segment(b, len) = out;
        break;
      }
      default: {
        const auto& c = C_.coefficients();
        p = wt;
        const std::size_t top = std::min(t_, cap_);
        for (std::size_t j = 1; j <= top; ++j)
          p -= c[j] * hist_v_.row(static_cast<Index>((t_ - j) % cap_)).segment(b, len).transpose();
        out = p / c[0];
        if (cap_ > 0) hist_v_.row(static_cast<Index>(t_ % cap_)).segment(b, len) = out.transpose();
      }
    }
  }

  void advance() {
    if (out_state_) out_state_->advance();
    ++t_;
  }

 private:
  Factorization C_;
  std::size_t t_ = 0, cap_ = 0;
  bool need_inverse_;
  std::optional<WorkloadState> out_state_;
  std::vector<double> a_;
  RowMatrix hist_y_, hist_v_;
  RowMatrix buf_s_, buf_r_;  // BLT buffers of C·Y and C^{-1}·W
  Vector y_prev_, v_prev_;
  Vector p_;
};

// Q_tt = (C^{-1} C^{-T})_tt streamed (docs/proofs/moments.md §5: a running sum of squared inverse coefficients).
class QDiagStream {
 public:
  explicit QDiagStream(const Factorization& C) : C_(C) {
    if (C.kind() == FactorizationKind::blt)
      blt_.emplace(detail::BltParameters{C.kappa(), C.theta(), C.omega()});
  }
  double next() {
    double q = 1;
    switch (C_.kind()) {
      case FactorizationKind::input: break;
      case FactorizationKind::output: {
        // C^{-1} = T(a)^{-1} D^{-1}: row t = (a'_{t-j} / D_j)_j.
        const auto& A = *C_.workload();
        push_inverse(A.coefficients(std::min(t_ + 1, A.steps())));
        q = 0;
        for (std::size_t j = 0; j <= t_; ++j) {
          const double v = y_[t_ - j] / A.row_scale(j);
          q += v * v;
        }
        break;
      }
      case FactorizationKind::blt: {  // O(buffers) a step
        const double y = blt_->next();
        running_ += y * y;
        q = running_;
        break;
      }
      default:
        push_inverse(C_.coefficients());
        running_ += y_[t_] * y_[t_];
        q = running_;
    }
    ++t_;
    return q;
  }

 private:
  // Appends y_t, the next coefficient of the inverse Toeplitz, from c.
  void push_inverse(const std::vector<double>& c) {
    if (t_ == 0) {
      y_.push_back(1 / c[0]);
      return;
    }
    double acc = 0;
    const std::size_t top = std::min(t_, c.size() - 1);
    for (std::size_t j = 1; j <= top; ++j) acc += c[j] * y_[t_ - j];
    y_.push_back(-acc / c[0]);
  }
  Factorization C_;
  std::optional<detail::BltInverseColumn> blt_;
  std::size_t t_ = 0;
  std::vector<double> y_;
  double running_ = 0;
};

}  // namespace dpstats::moments::detail
