// Buffered-linear-Toeplitz factorizations (McMahan et al. 2024) of the moments workloads:
// their coefficient streams in O(buffers) memory, the JME error factor in closed form, and the fit
// (docs/proofs/moments.md §6). Internal to src/moments.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "dpstats/moments/workload.hpp"

namespace dpstats::moments::detail {

struct BltParameters {
  double kappa = 1;
  std::vector<double> theta, omega;  // decays in (0, 1) and weights, one per buffer
};

// The Toeplitz coefficients of C, one per call: c_0 = kappa, c_k = kappa sum_i omega_i
// theta_i^(k-1).
class BltColumn {
 public:
  explicit BltColumn(BltParameters p) : p_(std::move(p)), power_(p_.theta.size(), 1.0) {}
  double next();

 private:
  BltParameters p_;
  std::vector<double> power_;
  bool first_ = true;
};

// The coefficients of C^{-1}, one per call: the impulse response of the buffered forward
// substitution v_t = w_t / kappa - sum_i omega_i r_i, r_i <- theta_i r_i + v_{t-1}, the same
// recursion the stream runs.
class BltInverseColumn {
 public:
  explicit BltInverseColumn(BltParameters p) : p_(std::move(p)), r_(p_.theta.size(), 0.0) {}
  double next();

 private:
  BltParameters p_;
  std::vector<double> r_;
  double previous_ = 0;
  bool first_ = true;
};

// ||A C^{-1}||_F^2 and the last row's squared norm, for a Toeplitz C whose inverse's coefficients
// next() returns in order: b = T(a) c' through the workload's recursion, rows scaled by D_t
// (O(n) calls, O(1) memory besides a window's ring).
struct BNorms {
  double frobenius_sq = 0, last_row_sq = 0;
};
template <class Next>
BNorms stream_b_norms(const Workload& A, Next next) {
  WorkloadState st(A, 1);
  double cum = 0;
  BNorms out;
  for (std::size_t t = 0; t < A.steps(); ++t) {
    const double ci = next();
    double scaled = 0;
    st.push(&ci, &scaled);  // D_t b_t
    const double D = A.row_scale(t), b = scaled / D;
    cum += b * b;
    out.frobenius_sq += D * D * cum;
    out.last_row_sq = D * D * cum;
  }
  return out;
}
// The same for a BLT: O(n m) time, O(m) memory.
BNorms blt_b_norms(const Workload& A, const BltParameters& p);

// The JME error factor ||C||_{1->2}^2 ||A C^{-1}||_F^2 in closed form, for a workload whose
// Toeplitz part is s/(1 - beta x) with unit row scale (prefix, decay, adam-plain): O(m^3 log n).
double blt_error_factor_closed(const BltParameters& p, double beta, double scale, std::size_t n);

// The m-buffer BLT minimising the error factor at A's horizon: Nelder-Mead on the closed form of
// the nearest such workload (A itself for prefix, decay and adam-plain; prefix for average, adam
// without the bias correction for adam), from a least-squares fit of the square root.
BltParameters fit_blt(const Workload& A, std::size_t buffers);

}  // namespace dpstats::moments::detail
