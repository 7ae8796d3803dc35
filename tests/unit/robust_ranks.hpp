// The harness of the robust means' tests over ranks (test_distributed_filter.cpp,
// test_distributed_prime.cpp): corrupted Gaussian rows, a byte dump of a release, uneven cuts
// (an empty rank included) and the check that every rank of P = 1..4 in-process ranks gives the
// single-process release while only rank 0 draws, as many words as one process.
#pragma once
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/mean/methods.hpp"
#include "../ranks_harness.hpp"

namespace dpstats::robust_ranks {

// Gaussian rows (mean 3, scale 1) in d columns; `far` rows of one identical outlier placed
// 12 scales away along the first column (ties in the top-k cut) and `scattered` distinct ones.
inline RowMatrix corrupted(Eigen::Index n, Eigen::Index d, Eigen::Index far, Eigen::Index scattered) {
  SeededRng g(11);
  auto u01 = [&] { return (static_cast<double>(g.next_u64() >> 11) + 0.5) * 0x1p-53; };
  RowMatrix X(n, d);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < d; ++j)
      X(i, j) = 3 + std::sqrt(-2 * std::log(u01())) * std::cos(2 * M_PI * u01());
  for (Eigen::Index i = 0; i < far; ++i) X.row(n / 3 + 2 * i).setConstant(3).coeffRef(0) = 15;
  for (Eigen::Index i = 0; i < scattered; ++i) X(n - 1 - 5 * i, 1) = 9 + 0.1 * static_cast<double>(i);
  return X;
}

using ranks_harness::dump;

// Rank r of P holds rows [cut(r), cut(r + 1)): uneven, and rank 1 of 3 holds none.
inline Eigen::Index cut(int r, int P, Eigen::Index n) {
  static const std::vector<std::vector<double>> at = {
      {0, 1}, {0, 0.37, 1}, {0, 0.61, 0.61, 1}, {0, 0.05, 0.5, 0.52, 1}};
  return static_cast<Eigen::Index>(at[static_cast<std::size_t>(P - 1)][static_cast<std::size_t>(r)] *
                                   static_cast<double>(n));
}

// Returns the single-process release's diagnostics after checking every P.
inline nlohmann::json expect_same_on_ranks(const MeanRequest& base, const RowMatrix& X) {
  nlohmann::json diagnostics;
  ranks_harness::expect_same_on_ranks(
      X.rows(), [](Eigen::Index n, int P, int r) { return cut(r, P, n); }, 5,
      [&](Eigen::Index lo, Eigen::Index hi, Communicator* c, Rng& rng) {
        MeanRequest r = base;
        r.run.comm = c;
        const Release<Vector> out = run_mean(X.middleRows(lo, hi - lo), r, rng);
        if (!c) diagnostics = out.diagnostics;
        return dump(out);
      });
  return diagnostics;
}

}  // namespace dpstats::robust_ranks
