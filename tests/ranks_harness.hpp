// The check every distributed test makes (issue 18): the single-process release and its draws,
// then P = 1..4 in-process ranks (run_local_ranks), rank r holding the rows
// [cut(n, P, r), cut(n, P, r + 1)): every rank's release must be the single-process release byte
// for byte, and only rank 0 may draw -- exactly as many words as one process (when the generator
// counts its draws; SeededRng, which splits, is checked on the bytes alone).
#pragma once
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "counting_rng.hpp"
#include "dpstats/comm/communicator.hpp"
#include "dpstats/release.hpp"

namespace dpstats::ranks_harness {

// A release as bytes: its JSON fields, then every estimate value in hex.
inline std::string dump(const Release<Vector>& r) {
  std::string s = release_fields_json(r).dump();
  for (Eigen::Index j = 0; j < r.estimate.size(); ++j) s += fmt::format(" {:a}", r.estimate[j]);
  return s;
}

// Where rank r of P starts (cut(n, P, 0) = 0, cut(n, P, P) = n).
using Cut = std::function<Eigen::Index(Eigen::Index n, int P, int r)>;

// Uneven cuts at fixed fractions of n.
inline Eigen::Index uneven(Eigen::Index n, int P, int r) {
  static const double at[4][5] = {{0, 1}, {0, 0.13, 1}, {0, 0.61, 0.64, 1}, {0, 0.05, 0.5, 0.9, 1}};
  return static_cast<Eigen::Index>(at[P - 1][r] * static_cast<double>(n));
}

// release(lo, hi, comm, rng): the dump of the release computed from rows [lo, hi) (comm null:
// one process holding rows [0, n)). Returns the single-process dump.
template <class Gen = CountingRng>
std::string expect_same_on_ranks(
    Eigen::Index n, const Cut& cut, std::uint64_t seed,
    const std::function<std::string(Eigen::Index, Eigen::Index, Communicator*, Rng&)>& release) {
  constexpr bool counts = std::is_same_v<Gen, CountingRng>;
  Gen one(seed);
  const std::string single = release(0, n, nullptr, one);
  for (int P = 1; P <= 4; ++P) {
    std::mutex mu;
    std::vector<std::string> got(static_cast<std::size_t>(P));
    std::vector<long> draws(static_cast<std::size_t>(P));
    run_local_ranks(P, [&](Communicator& c) {
      Gen rng(seed);
      const std::string s = release(cut(n, P, c.rank()), cut(n, P, c.rank() + 1), &c, rng);
      const std::lock_guard lock(mu);
      got[static_cast<std::size_t>(c.rank())] = s;
      if constexpr (counts) draws[static_cast<std::size_t>(c.rank())] = rng.draws;
    });
    for (int k = 0; k < P; ++k) {
      EXPECT_EQ(got[static_cast<std::size_t>(k)], single) << "P = " << P << ", rank " << k;
      if constexpr (counts)
        EXPECT_EQ(draws[static_cast<std::size_t>(k)], k == 0 ? one.draws : 0) << "P = " << P;
    }
  }
  return single;
}

}  // namespace dpstats::ranks_harness
