// Private training over ranks (issue 18 item 4; docs/proofs/training.md §4): each step's Poisson
// batch is decided per global row id by a key rank 0 draws, the clipped per-example gradients are
// added on an integer lattice and merged exactly, and rank 0 draws the noise. So on P = 1..4
// in-process ranks (run_local_ranks) with uneven cuts of the rows, the seeded release -- model,
// diagnostics, ledger -- is the single-process release on every rank, and only rank 0 draws (as
// many words as one process).
#include <gtest/gtest.h>

#include <fmt/format.h>


#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/training/train_classifier.hpp"
#include "../../src/training/keyed_sample.hpp"  // the keyed Poisson sample (internal)
#include "../ranks_harness.hpp"

namespace dpstats::optimize {
namespace {

struct Toy {
  RowMatrix X;
  std::vector<int> y;
};

// k blobs in d dimensions; every third feature value is exactly 0 (the kernels skip zero
// activations), a few rows are far out (clipped).
Toy blobs(Eigen::Index n, Eigen::Index d, int k, std::uint64_t seed) {
  SeededRng rng(seed);
  RowMatrix centres(k, d);
  for (Eigen::Index i = 0; i < centres.size(); ++i) centres.data()[i] = 2 * rng.uniform01();
  Toy t{RowMatrix(n, d), std::vector<int>(static_cast<std::size_t>(n))};
  for (Eigen::Index i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.uniform_below(static_cast<std::uint64_t>(k)));
    t.y[static_cast<std::size_t>(i)] = c;
    for (Eigen::Index j = 0; j < d; ++j)
      t.X(i, j) = (i + j) % 3 == 0 ? 0.0 : centres(c, j) + 0.4 * (rng.uniform01() - 0.5);
    if (i % 97 == 0) t.X.row(i) *= 30;
  }
  return t;
}

std::string dump(Release<Classifier> r) {
  std::string s = release_fields_json(r).dump();
  for (Eigen::Index j = 0; j < r.estimate.num_parameters(); ++j)
    s += fmt::format(" {:a}", r.estimate.parameters()[j]);
  return s;
}

// Returns the single-process release.
std::string expect_same_on_ranks(const Toy& t, const ClassifyOptions& base,
                                 const Classifier& model) {
  const std::string single = ranks_harness::expect_same_on_ranks(
      t.X.rows(), ranks_harness::uneven, 5,
      [&](Eigen::Index lo, Eigen::Index hi, Communicator* c, Rng& rng) {
        ClassifyOptions o = base;
        o.run.comm = c;
        const std::vector<int> y(t.y.begin() + lo, t.y.begin() + hi);
        return dump(train_classifier(model, t.X.middleRows(lo, hi - lo), y, o, rng));
      });
  EXPECT_NE(single.find("\"status\":\"ok\""), std::string::npos) << single;
  return single;
}

ClassifyOptions options(ClassifyOptimizer opt) {
  ClassifyOptions o;
  o.optimizer = opt;
  o.epochs = 2;
  o.batch_size = 40;
  o.n_public = 600;  // the public row count (the tables below hold 500 to 700 rows)
  o.privacy = {4.0, 1e-5};
  o.noise_multiplier = 1.2;
  o.feature_scale = 3.0;
  o.clip = 0.5;  // clips most examples
  o.learning_rate = opt == ClassifyOptimizer::dp_sgd ? 0.3 : 0.02;
  return o;
}

TEST(DistributedTraining, EveryPrivateOptimizerIsTheSingleProcessRelease) {
  const Toy t = blobs(600, 6, 3, 1);
  for (auto opt : {ClassifyOptimizer::dp_sgd, ClassifyOptimizer::dp_adam,
                   ClassifyOptimizer::dp_adam_debiased, ClassifyOptimizer::dp_adam_jme,
                   ClassifyOptimizer::dp_adam_joint_clip}) {
    SCOPED_TRACE(to_string(opt));
    expect_same_on_ranks(t, options(opt), Classifier::logistic(6, 3));
  }
}

TEST(DistributedTraining, MlpWithThreadsAndNoNoiseThread) {
  const Toy t = blobs(500, 5, 3, 2);
  SeededRng init(3);
  ClassifyOptions o = options(ClassifyOptimizer::dp_adam_jme);
  o.run.threads = 2;
  o.noise_thread = false;
  expect_same_on_ranks(t, o, Classifier::mlp(5, 8, 3, init));
}

TEST(DistributedTraining, PrivateFeatureScalesAreTheSingleProcessOnes) {
  const Toy t = blobs(700, 4, 2, 4);
  ClassifyOptions o = options(ClassifyOptimizer::dp_adam);
  o.feature_scale.reset();
  o.privacy = {6.0, 1e-5};  // the global scale (the median row norm), declared one unit
  o.one_unit = true;
  o.noise_multiplier = 5;
  EXPECT_NE(expect_same_on_ranks(t, o, Classifier::logistic(4, 2)).find("median row norm"),
            std::string::npos);
  o.privacy = {40.0, 1e-5};  // the per-column private median and scale
  EXPECT_NE(expect_same_on_ranks(t, o, Classifier::logistic(4, 2)).find("per-column"),
            std::string::npos);
}

TEST(DistributedTraining, BatchesHaveTheExpectedSize) {
  // The keyed Poisson sample: 15 steps of q = 40/600 over 600 rows, 600 examples expected
  // (sd about 24); and m = N takes every row.
  const Toy t = blobs(600, 6, 3, 5);
  ClassifyOptions o = options(ClassifyOptimizer::dp_sgd);
  o.epochs = 1;
  std::size_t examples = 0;
  SeededRng rng(6);
  train_classifier(Classifier::logistic(6, 3), t.X, t.y, o, rng, nullptr, {},
                   [&](const EpochReport& r) { examples = r.examples; });
  EXPECT_NEAR(static_cast<double>(examples), 600, 120);
  o.batch_size = 600;
  train_classifier(Classifier::logistic(6, 3), t.X, t.y, o, rng, nullptr, {},
                   [&](const EpochReport& r) { examples = r.examples; });
  EXPECT_EQ(examples, 600u);
}

TEST(DistributedTraining, KeyedSampleIsTheSameSetOverAnySplit) {
  // The global ids of step t's sample do not depend on where the rows are cut; steps differ.
  const std::int64_t N = 20000;
  KeyedPoissonSample whole(11, 12, 256.0 / static_cast<double>(N));
  std::vector<Eigen::Index> all, part, other;
  whole.sample(3, 0, N, all);
  whole.sample(4, 0, N, other);
  EXPECT_NE(all, other);
  for (const std::vector<std::int64_t>& cuts :
       {std::vector<std::int64_t>{0, 1, N}, {0, 7000, 7001, 13000, N}, {0, N / 2, N}}) {
    KeyedPoissonSample sampler(11, 12, 256.0 / static_cast<double>(N));
    std::vector<Eigen::Index> joined;
    for (std::size_t r = 0; r + 1 < cuts.size(); ++r) {
      sampler.sample(3, cuts[r], cuts[r + 1] - cuts[r], part);
      for (const Eigen::Index i : part) joined.push_back(cuts[r] + i);
    }
    EXPECT_EQ(joined, all);
  }
}

TEST(DistributedTraining, KeyedSampleIncludesEachRowAtTheRate) {
  // 4000 steps at q = 0.05 over 50 rows: each row's count is Binomial(4000, q) (sd 13.8), the
  // total Binomial(200000, q) (sd 97); 5.3 sd bounds (two-sided 1e-7 each).
  const std::int64_t N = 50, T = 4000;
  const double q = 0.05;
  KeyedPoissonSample sampler(21, 22, q);
  std::vector<long> counts(N, 0);
  std::vector<Eigen::Index> rows;
  for (std::int64_t t = 1; t <= T; ++t) {
    sampler.sample(static_cast<std::uint64_t>(t), 0, N, rows);
    for (const Eigen::Index i : rows) ++counts[static_cast<std::size_t>(i)];
  }
  long total = 0;
  for (const long c : counts) {
    EXPECT_LE(std::abs(c - T * q), 5.3 * std::sqrt(T * q * (1 - q)));
    total += c;
  }
  EXPECT_LE(std::abs(total - N * T * q), 5.3 * std::sqrt(N * T * q * (1 - q)));
  KeyedPoissonSample every(1, 2, 1.0);
  every.sample(1, 0, N, rows);
  EXPECT_EQ(rows.size(), static_cast<std::size_t>(N));
}

TEST(DistributedTraining, RefusalsStopEveryRank) {
  const Toy t = blobs(200, 3, 2, 7);
  ClassifyOptions o = options(ClassifyOptimizer::adam);
  // Non-private Adam has no clipped lattice sum: refused on several ranks, before any draw.
  EXPECT_THROW(run_local_ranks(2, [&](Communicator& c) {
                 ClassifyOptions a = o;
                 a.run.comm = &c;
                 CountingRng rng(1);
                 train_classifier(Classifier::logistic(3, 2), t.X, t.y, a, rng);
               }),
               InvalidArgument);
  // A label out of range on one rank's rows stops every rank.
  o = options(ClassifyOptimizer::dp_sgd);
  EXPECT_THROW(run_local_ranks(3, [&](Communicator& c) {
                 ClassifyOptions a = o;
                 a.run.comm = &c;
                 std::vector<int> y(t.y.begin(), t.y.begin() + 60);
                 if (c.rank() == 2) y[5] = 7;
                 SeededRng rng(1);
                 train_classifier(Classifier::logistic(3, 2), t.X.topRows(60), y, a, rng);
               }),
               InvalidArgument);
  // Options that differ between ranks: the fingerprint check refuses.
  EXPECT_THROW(run_local_ranks(2, [&](Communicator& c) {
                 ClassifyOptions a = o;
                 a.run.comm = &c;
                 if (c.rank() == 1) a.clip = 0.6;
                 SeededRng rng(1);
                 train_classifier(Classifier::logistic(3, 2), t.X, t.y, a, rng);
               }),
               InvalidArgument);
}

}  // namespace
}  // namespace dpstats::optimize
