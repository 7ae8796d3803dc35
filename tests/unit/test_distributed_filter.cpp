// The private filter over ranks (issue 18): on P = 1..4 in-process ranks (run_local_ranks) with
// uneven cuts (an empty rank included) the seeded release -- estimate, diagnostics, ledger -- is
// the single-process release on every rank, only rank 0 draws (as many words as one process),
// for both profiles, with the top-k cut binding on tied rows; an absent scale and PRIME refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/methods.hpp"
#include "../counting_rng.hpp"

namespace dpstats {
namespace {

// Gaussian rows (mean 3, scale 1) in d columns; `far` rows of one identical outlier placed
// 12 scales away along the first column (ties in the top-k cut) and `scattered` distinct ones.
RowMatrix corrupted(Eigen::Index n, Eigen::Index d, Eigen::Index far, Eigen::Index scattered) {
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

std::string dump(const Release<Vector>& r) {
  std::string s = release_fields_json(r).dump();
  for (Eigen::Index j = 0; j < r.estimate.size(); ++j) s += fmt::format(" {:a}", r.estimate[j]);
  return s;
}

// Rank r of P holds rows [cut(r), cut(r + 1)): uneven, and rank 1 of 3 holds none.
Eigen::Index cut(int r, int P, Eigen::Index n) {
  static const std::vector<std::vector<double>> at = {
      {0, 1}, {0, 0.37, 1}, {0, 0.61, 0.61, 1}, {0, 0.05, 0.5, 0.52, 1}};
  return static_cast<Eigen::Index>(at[static_cast<std::size_t>(P - 1)][static_cast<std::size_t>(r)] *
                                   static_cast<double>(n));
}

// Returns the single-process release's diagnostics after checking every P.
nlohmann::json expect_same_on_ranks(const MeanRequest& base, const RowMatrix& X) {
  const Eigen::Index n = X.rows();
  CountingRng one(5);
  const Release<Vector> ref = run_mean(X, base, one);
  const std::string single = dump(ref);
  for (int P = 1; P <= 4; ++P) {
    std::mutex m;
    std::vector<std::string> got(static_cast<std::size_t>(P));
    std::vector<long> draws(static_cast<std::size_t>(P));
    run_local_ranks(P, [&](Communicator& c) {
      const Eigen::Index lo = cut(c.rank(), P, n), hi = cut(c.rank() + 1, P, n);
      MeanRequest r = base;
      r.run.comm = &c;
      CountingRng rng(5);
      const std::string s = dump(run_mean(X.middleRows(lo, hi - lo), r, rng));
      const std::lock_guard lock(m);
      got[static_cast<std::size_t>(c.rank())] = s;
      draws[static_cast<std::size_t>(c.rank())] = rng.draws;
    });
    for (int k = 0; k < P; ++k) {
      EXPECT_EQ(got[static_cast<std::size_t>(k)], single) << "P = " << P << ", rank " << k;
      EXPECT_EQ(draws[static_cast<std::size_t>(k)], k == 0 ? one.draws : 0) << "P = " << P;
    }
  }
  return ref.diagnostics;
}

MeanRequest filter_request(Eigen::Index d, Profile profile) {
  MeanRequest r;
  r.method = "filter";
  r.alpha = 0.05;
  r.privacy = {2.0, 1e-6};
  r.profile = profile;
  r.scale = std::vector<double>(static_cast<std::size_t>(d), 1.0);
  return r;
}

TEST(DistributedFilter, PracticalIsTheSingleProcessReleaseAndFilters) {
  const RowMatrix X = corrupted(6000, 4, 500, 40);
  MeanRequest r = filter_request(4, Profile::practical);
  r.alpha = 0.1;
  r.privacy = {10.0, 1e-6};
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedFilter, TopKCutOnTiedRowsIsTheSingleProcessRelease) {
  // 400 identical outliers and k = ceil(0.05 n) = 200: the first round's cut takes 200 of them,
  // chosen by the value order (then the global row id) across ranks.
  const RowMatrix X = corrupted(4000, 3, 400, 0);
  MeanRequest r = filter_request(3, Profile::practical);
  r.privacy = {10.0, 1e-6};
  r.topk_multiplier = 1;
  r.T = 3;
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedFilter, PaperProfileIsTheSingleProcessRelease) {
  const RowMatrix X = corrupted(30000, 2, 3000, 10);  // paper: noisy lambda needs n large
  MeanRequest r = filter_request(2, Profile::paper);
  r.alpha = 0.1;
  r.privacy = {100.0, 1e-3};  // paper: n >= (4/eps1) ln(1/(2 delta1)), eps1 <= 0.9/(4 sqrt(2T ln(2/delta)))
  r.T = 4;
  const auto diag = expect_same_on_ranks(r, X);
  EXPECT_GE(diag.at("filter_rounds").get<int>(), 1) << diag.dump();
}

TEST(DistributedFilter, AbsentScaleAndPrimeRefuseSeveralRanks) {
  const RowMatrix X = corrupted(400, 2, 0, 0);
  for (const char* method : {"filter", "prime", "prime-ht"}) {
    EXPECT_THROW(run_local_ranks(2, [&](Communicator& c) {
      MeanRequest r;
      r.method = method;
      r.alpha = 0.05;
      r.privacy = {1.0, 1e-6};
      if (std::string(method) != "filter") r.scale = std::vector<double>{1.0, 1.0};
      r.run.comm = &c;
      SeededRng rng(1);
      run_mean(X.middleRows(200 * c.rank(), 200), r, rng);
    }), InvalidArgument) << method;
  }
}

}  // namespace
}  // namespace dpstats
