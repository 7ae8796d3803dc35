// Threads and ranks for the heavy-tailed fit, private training and the moments stream (issues 17
// and 18): a seeded release is byte-identical at 1, 2 and 3 threads, and the distributed
// heavy-tailed GD on P = 1..4 ranks (as threads, run_local_ranks) releases exactly what one
// process releases on the same rows. What does not distribute refuses on every rank.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/synthetic/heavy_tailed_data.hpp"
#include "dpstats/training/train_classifier.hpp"

namespace dpstats {
namespace {

using optimize::HeavyTailedMethod;
using optimize::HeavyTailedOptions;
using optimize::HeavyTailedSample;
using optimize::HeavyTailedTask;
using optimize::HeavyTailedTaskKind;
using optimize::generate_heavy_tailed;

HeavyTailedSample sample(std::int64_t n, std::int64_t d, std::uint64_t seed,
                         HeavyTailedTaskKind kind = HeavyTailedTaskKind::l1_student_t) {
  HeavyTailedTask t;
  t.kind = kind;
  t.d = d;
  t.nu = 5;
  SeededRng rng(seed);
  return generate_heavy_tailed(t, n, rng);
}

// Everything a release states, as bytes: the estimate and the JSON fields.
template <class T>
std::string bytes_of(const Release<T>& r, const Vector& estimate) {
  std::string s(reinterpret_cast<const char*>(estimate.data()),
                static_cast<std::size_t>(estimate.size()) * sizeof(double));
  return s + release_fields_json(r).dump();
}

std::string fit_bytes(const HeavyTailedSample& s, HeavyTailedOptions o, int threads) {
  o.run.threads = threads;
  SeededRng rng(77);
  const auto r = optimize::fit_heavy_tailed(s.X, s.y, o, rng);
  return bytes_of(r, r.estimate);
}

HeavyTailedOptions options(HeavyTailedMethod m) {
  HeavyTailedOptions o;
  o.method = m;
  o.privacy = {2.0, m == HeavyTailedMethod::dp_sgd ? 1e-6 : 0.0};
  o.domain_radius = 2;
  return o;
}

// Rows above 4096 (the certificate's chunk: output perturbation solves on all of them) and 2048
// per GD part, so every pass is cut.
TEST(ParallelFits, HeavyTailedReleasesAreThreadCountInvariant) {
  const HeavyTailedSample s = sample(9000, 3, 3);
  for (auto m : {HeavyTailedMethod::clipped_gd, HeavyTailedMethod::dp_sgd,
                 HeavyTailedMethod::lipschitz_extension, HeavyTailedMethod::output_perturbation}) {
    const HeavyTailedOptions o = options(m);  // default: private scale, centring, private clip
    const std::string one = fit_bytes(s, o, 1);
    EXPECT_EQ(fit_bytes(s, o, 2), one) << name_of(m);
    EXPECT_EQ(fit_bytes(s, o, 3), one) << name_of(m);
  }
}

// The rows of `s` split over `ranks` ranks: rank r holds rows [cut(r), cut(r + 1)), uneven on
// purpose (one rank may hold none).
RowMatrix shard_of(const RowMatrix& X, int rank, int ranks, std::int64_t* begin) {
  auto cut = [&](int r) { return r == 0 ? 0 : X.rows() * (r * r + r) / (ranks * ranks + ranks); };
  *begin = cut(rank);
  return X.middleRows(cut(rank), cut(rank + 1) - cut(rank));
}

std::string distributed_fit_bytes(const HeavyTailedSample& s, HeavyTailedOptions o, int ranks) {
  std::vector<std::string> out(static_cast<std::size_t>(ranks));
  run_local_ranks(ranks, [&](Communicator& c) {
    std::int64_t begin = 0;
    const RowMatrix X = shard_of(s.X, c.rank(), c.size(), &begin);
    const Vector y = s.y.segment(begin, X.rows());
    HeavyTailedOptions mine = o;
    mine.run.comm = &c;
    mine.run.threads = 1 + c.rank() % 2;  // ranks need not agree on threads
    SeededRng rng(77);  // only rank 0's draws reach the release
    const auto r = optimize::fit_heavy_tailed(X, y, mine, rng);
    out[static_cast<std::size_t>(c.rank())] = bytes_of(r, r.estimate);
  });
  for (const auto& b : out) EXPECT_EQ(b, out[0]) << "ranks disagree";
  return out[0];
}

TEST(ParallelFits, HeavyTailedGdOnRanksEqualsOneProcess) {
  const HeavyTailedSample s = sample(9000, 3, 5);
  for (auto m : {HeavyTailedMethod::clipped_gd, HeavyTailedMethod::dp_sgd}) {
    HeavyTailedOptions o = options(m);
    o.moment_bound = 2.5;
    o.steps = 12;
    const std::string single = fit_bytes(s, o, 2);
    for (int p = 1; p <= 4; ++p) EXPECT_EQ(distributed_fit_bytes(s, o, p), single) << p;
  }
}

// {0, 1} hinge labels are mapped by the global label set: a shard of only 1s maps too.
TEST(ParallelFits, HeavyTailedLabelsAreMappedOverAllRanks) {
  HeavyTailedSample s = sample(600, 2, 9, HeavyTailedTaskKind::hinge_student_t);
  for (Eigen::Index i = 0; i < s.y.size(); ++i) s.y[i] = i < 300 ? 0.0 : 1.0;
  HeavyTailedOptions o = options(HeavyTailedMethod::clipped_gd);
  o.loss = optimize::GlmKind::hinge;
  o.moment_bound = 1.5;
  o.steps = 12;
  EXPECT_EQ(distributed_fit_bytes(s, o, 3), fit_bytes(s, o, 1));
}

TEST(ParallelFits, HeavyTailedRefusesWhatDoesNotDistribute) {
  const HeavyTailedSample s = sample(400, 2, 4);
  auto expect_refused = [&](HeavyTailedOptions o, const std::string& needle) {
    std::atomic<int> refused{0};
    try {
      run_local_ranks(2, [&](Communicator& c) {
        HeavyTailedOptions mine = o;
        mine.run.comm = &c;
        SeededRng rng(1);
        try {
          optimize::fit_heavy_tailed(s.X, s.y, mine, rng);
        } catch (const InvalidArgument& e) {
          EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
          ++refused;
          throw;
        }
      });
    } catch (const InvalidArgument&) {
    }
    EXPECT_EQ(refused.load(), 2) << needle;
  };
  HeavyTailedOptions le = options(HeavyTailedMethod::lipschitz_extension);
  le.moment_bound = 2;
  le.inner = optimize::InnerSolver::double_output_perturbation;
  expect_refused(le, "inner double-output-perturbation does not run on 2 ranks");
  expect_refused(options(HeavyTailedMethod::non_private), "method non-private does not run on 2 ranks");
  HeavyTailedOptions mismatch = options(HeavyTailedMethod::clipped_gd);
  mismatch.moment_bound = 2;
  std::atomic<int> refused{0};
  try {
    run_local_ranks(2, [&](Communicator& c) {
      HeavyTailedOptions mine = mismatch;
      mine.run.comm = &c;
      if (c.rank() == 1) mine.privacy.epsilon = 3;  // the agreement guard
      SeededRng rng(1);
      try {
        optimize::fit_heavy_tailed(s.X, s.y, mine, rng);
      } catch (const InvalidArgument&) {
        ++refused;
        throw;
      }
    });
  } catch (const InvalidArgument&) {
  }
  EXPECT_EQ(refused.load(), 2);
}

// --- Training ----------------------------------------------------------------------------------

std::string train_bytes(const RowMatrix& X, const std::vector<int>& y,
                        optimize::ClassifyOptimizer opt, int threads) {
  optimize::ClassifyOptions o;
  o.optimizer = opt;
  o.epochs = 1;
  o.batch_size = 300;  // blocks of 64: the last one partial
  o.n_public = X.rows();
  o.privacy = {20.0, 1e-5};
  o.noise_multiplier = 1.0;  // no calibration search (the test is about the steps)
  o.feature_scale = 2.0;
  o.run.threads = threads;
  SeededRng init(3), rng(8);
  auto r = optimize::train_classifier(optimize::Classifier::mlp(X.cols(), 16, 3, init), X, y, o,
                                      rng);
  return bytes_of(r, r.estimate.parameters());
}

TEST(ParallelFits, TrainingIsThreadCountInvariant) {
  SeededRng g(21);
  RowMatrix X(3000, 6);
  std::vector<int> y(3000);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    y[static_cast<std::size_t>(i)] = static_cast<int>(g.uniform_below(3));
    for (Eigen::Index j = 0; j < X.cols(); ++j)
      X(i, j) = y[static_cast<std::size_t>(i)] * (j % 3 == 0) + 0.5 * g.uniform01();
  }
  for (auto opt : {optimize::ClassifyOptimizer::dp_sgd, optimize::ClassifyOptimizer::dp_adam_jme}) {
    const std::string one = train_bytes(X, y, opt, 1);
    EXPECT_EQ(train_bytes(X, y, opt, 2), one);
    EXPECT_EQ(train_bytes(X, y, opt, 3), one);
  }
}

TEST(ParallelFits, TrainingAndMomentsRefuseSeveralRanks) {
  std::atomic<int> refused{0};
  try {
    run_local_ranks(2, [&](Communicator& c) {
      RowMatrix X = RowMatrix::Ones(10, 2);
      std::vector<int> y(10, 0);
      y[1] = 1;
      optimize::ClassifyOptions o;  // private training runs on ranks (test_distributed_training);
      o.optimizer = optimize::ClassifyOptimizer::adam;  // non-private Adam (no clip) does not
      o.run.comm = &c;
      SeededRng rng(1);
      try {
        optimize::train_classifier(optimize::Classifier::logistic(2, 2), X, y, o, rng);
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("does not run on 2 ranks"), std::string::npos);
        ++refused;
        throw;
      }
    });
  } catch (const InvalidArgument&) {
  }
  EXPECT_EQ(refused.load(), 2);
  moments::MomentsConfig c = moments::make_config(3, 2, "jme", "prefix", "sqrt", false);
  c.clip = 1;
  c.noise_multiplier = 1;
  c.privacy.delta = 1e-6;
  refused = 0;
  try {
    run_local_ranks(2, [&](Communicator& comm) {
      moments::MomentsConfig mine = c;
      mine.run.comm = &comm;
      SeededRng rng(1);
      try {
        moments::MomentEstimator est(mine, rng);
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("does not run on 2 ranks"), std::string::npos);
        ++refused;
        throw;
      }
    });
  } catch (const InvalidArgument&) {
  }
  EXPECT_EQ(refused.load(), 2);
}

// --- Moments ------------------------------------------------------------------------------------

// A d = 2^17 diagonal stream (chunked steps) at 1, 2 and 3 threads.
TEST(ParallelFits, MomentsPushIsThreadCountInvariant) {
  const std::size_t d = 1 << 17, steps = 3;
  SeededRng g(4);
  RowMatrix X(steps, static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = (g.uniform01() - 0.5) / 200;
  auto run = [&](int threads) {
    moments::MomentsConfig c = moments::make_config(steps, d, "jme", "prefix", "sqrt", true);
    c.clip = 2;
    c.noise_multiplier = 1;
    c.privacy.delta = 1e-6;
    c.run.threads = threads;
    SeededRng rng(6);
    const auto r = moments::estimate_moments(X, c, rng);
    std::string s(reinterpret_cast<const char*>(r.estimate.first.data()),
                  static_cast<std::size_t>(r.estimate.first.size()) * sizeof(double));
    s.append(reinterpret_cast<const char*>(r.estimate.second.data()),
             static_cast<std::size_t>(r.estimate.second.size()) * sizeof(double));
    return s + release_fields_json(r).dump();
  };
  const std::string one = run(1);
  EXPECT_EQ(run(2), one);
  EXPECT_EQ(run(3), one);
}

}  // namespace
}  // namespace dpstats
