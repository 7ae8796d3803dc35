// Classifiers with per-example gradients, clipping and the private training loop
// (training/classifier.hpp, gradient_release.hpp, train_classifier.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "dpstats/error.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "dpstats/training/classifier.hpp"
#include "dpstats/training/gradient_release.hpp"
#include "dpstats/training/train_classifier.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/pld.hpp"
#include "dpstats/privacy/rdp.hpp"
#include "dpstats/random/rng.hpp"
#include "guarantee.hpp"

using namespace dpstats;
using namespace dpstats::optimize;

namespace {

struct Toy {
  RowMatrix X;
  std::vector<int> y;
};

// k Gaussian blobs in d dimensions, well separated.
Toy blobs(Eigen::Index n, Eigen::Index d, int k, std::uint64_t seed, double spread = 0.3) {
  SeededRng rng(seed);
  RowMatrix centers(k, d);
  for (Eigen::Index i = 0; i < centers.size(); ++i) centers.data()[i] = rng.uniform01();
  Toy t{RowMatrix(n, d), std::vector<int>(static_cast<std::size_t>(n))};
  for (Eigen::Index i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.uniform_below(static_cast<std::uint64_t>(k)));
    t.y[static_cast<std::size_t>(i)] = c;
    for (Eigen::Index j = 0; j < d; ++j)
      t.X(i, j) = centers(c, j) + spread * (rng.uniform01() - 0.5);
  }
  return t;
}

double loss_of(const Classifier& m, const RowMatrix& X, const std::vector<int>& y, Eigen::Index i) {
  return m.mean_loss(X.middleRows(i, 1), {y[static_cast<std::size_t>(i)]});
}

void expect_gradients_match_finite_differences(Classifier model, const Toy& t) {
  std::vector<Eigen::Index> rows = {0, 3, 5};
  const BatchGradients b(model, t.X, t.y, rows, 2);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Vector g = b.example_gradient(static_cast<Eigen::Index>(k));
    EXPECT_NEAR(b.losses()(static_cast<Eigen::Index>(k)), loss_of(model, t.X, t.y, rows[k]), 1e-12);
    for (Eigen::Index p = 0; p < model.num_parameters(); p += 3) {
      const double h = 1e-6, keep = model.parameters()(p);
      model.parameters()(p) = keep + h;
      const double up = loss_of(model, t.X, t.y, rows[k]);
      model.parameters()(p) = keep - h;
      const double down = loss_of(model, t.X, t.y, rows[k]);
      model.parameters()(p) = keep;
      EXPECT_NEAR(g(p), (up - down) / (2 * h), 1e-6) << "parameter " << p << " example " << k;
    }
  }
}

}  // namespace

TEST(Classifier, LogisticPerExampleGradientsMatchFiniteDifferences) {
  const Toy t = blobs(8, 5, 3, 1);
  Classifier m = Classifier::logistic(5, 3);
  SeededRng rng(2);
  for (Eigen::Index i = 0; i < m.num_parameters(); ++i) m.parameters()(i) = rng.uniform01() - 0.5;
  expect_gradients_match_finite_differences(m, t);
}

TEST(Classifier, MlpPerExampleGradientsMatchFiniteDifferences) {
  const Toy t = blobs(8, 5, 3, 3);
  SeededRng rng(4);
  Classifier m = Classifier::mlp(5, 7, 3, rng);
  for (Eigen::Index i = 0; i < m.num_parameters(); ++i) m.parameters()(i) += 0.1 * (rng.uniform01() - 0.5);
  expect_gradients_match_finite_differences(m, t);
}

TEST(Classifier, GhostNormsAndWeightedSumsMatchExplicitGradients) {
  const Toy t = blobs(40, 6, 4, 5);
  SeededRng rng(6);
  for (bool mlp : {false, true}) {
    Classifier m = mlp ? Classifier::mlp(6, 5, 4, rng) : Classifier::logistic(6, 4);
    for (Eigen::Index i = 0; i < m.num_parameters(); ++i) m.parameters()(i) += rng.uniform01() - 0.5;
    std::vector<Eigen::Index> rows(40);
    std::iota(rows.begin(), rows.end(), 0);
    const BatchGradients b(m, t.X, t.y, rows, 3);
    const Vector n2 = b.norms2(), n4 = b.norms4();
    Vector w(40), w2(40);
    for (int i = 0; i < 40; ++i) {
      w(i) = rng.uniform01();
      w2(i) = rng.uniform01();
    }
    Vector sum_expected = Vector::Zero(m.num_parameters()), sq_expected = sum_expected;
    for (Eigen::Index i = 0; i < 40; ++i) {
      const Vector g = b.example_gradient(i);
      EXPECT_NEAR(n2(i), g.squaredNorm(), 1e-10 * (1 + g.squaredNorm()));
      EXPECT_NEAR(n4(i), g.array().pow(4).sum(), 1e-10 * (1 + n4(i)));
      sum_expected += w(i) * g;
      sq_expected += w2(i) * g.cwiseAbs2();
    }
    Vector sum, sq;
    b.weighted_sum(w, sum, &w2, &sq);
    EXPECT_LT((sum - sum_expected).norm(), 1e-10 * (1 + sum_expected.norm()));
    EXPECT_LT((sq - sq_expected).norm(), 1e-10 * (1 + sq_expected.norm()));
  }
}

TEST(GradientRelease, ClippingBoundsEveryContribution) {
  const Toy t = blobs(60, 6, 3, 7, 2.0);
  SeededRng rng(8);
  Classifier m = Classifier::mlp(6, 8, 3, rng);
  std::vector<Eigen::Index> rows(60);
  std::iota(rows.begin(), rows.end(), 0);
  const BatchGradients b(m, t.X, t.y, rows);
  const Vector n2 = b.norms2(), n4 = b.norms4();
  for (auto opt : {ClassifyOptimizer::dp_adam, ClassifyOptimizer::dp_adam_jme,
                   ClassifyOptimizer::dp_adam_joint_clip}) {
    GradientReleaseConfig c;
    c.optimizer = opt;
    c.parameters = m.num_parameters();
    c.clip = 0.05;  // well below the gradient norms, so clipping is active
    c.lambda = 0.7;
    c.tau = 0.5;
    const GradientRelease r(c);
    Vector w1, w2;
    r.clip_weights(b, w1, w2);
    int clipped = 0;
    for (Eigen::Index i = 0; i < 60; ++i) {
      const double first = w1(i) * w1(i) * n2(i);
      if (opt == ClassifyOptimizer::dp_adam_joint_clip) {
        // ||(c g, c √τ g∘g)|| <= ζ
        EXPECT_LE(std::sqrt(first + c.tau * w1(i) * w1(i) * n4(i)), c.clip * (1 + 1e-12));
      } else {
        EXPECT_LE(std::sqrt(first), c.clip * (1 + 1e-12));
      }
      if (opt == ClassifyOptimizer::dp_adam_jme) {
        EXPECT_DOUBLE_EQ(w2(i), w1(i) * w1(i));  // (c g)∘(c g)
        // One example's joint contribution stays within the sensitivity ζ sqrt(1 + λζ²).
        const double joint = std::sqrt(first + c.lambda * w2(i) * w2(i) * n4(i));
        EXPECT_LE(joint, r.sensitivity() * (1 + 1e-12));
      }
      clipped += w1(i) < 1;
    }
    EXPECT_GT(clipped, 30);
  }
  GradientReleaseConfig c;
  c.optimizer = ClassifyOptimizer::dp_adam_jme;
  c.parameters = 10;
  c.clip = 2;
  c.lambda = 0.5;
  // docs/proofs/training.md §4: the lattice sum's add/remove sensitivity, one example's integer
  // vector 2^b (1 + e)^2 + sqrt(D)/2 (b = 30 for B = 65536, e = (D + 32) 2^-52) in value units,
  // plus B ball 2^-50 for the conversion.
  auto lattice = [](double ball, double D) {
    const double e = (D + 32) * 0x1p-52;
    return (0x1p30 * (1 + e) * (1 + e) + std::sqrt(D) / 2) * ball * 0x1p-30 +
           65536.0 * ball * 0x1p-50;
  };
  EXPECT_DOUBLE_EQ(GradientRelease(c).sensitivity(), lattice(2 * std::sqrt(1 + 0.5 * 4), 20));
  EXPECT_DOUBLE_EQ(GradientRelease(c).unit(), 2 * std::sqrt(1 + 0.5 * 4) * 0x1p-30);
  c.optimizer = ClassifyOptimizer::dp_adam;
  EXPECT_DOUBLE_EQ(GradientRelease(c).sensitivity(), lattice(2, 10));
  EXPECT_GT(GradientRelease(c).sensitivity(), 2);
  c.max_batch = 0;
  EXPECT_THROW(GradientRelease{c}, InvalidArgument);
  // A batch larger than max_batch is refused: the margin would not cover its sum.
  const Classifier lr = Classifier::logistic(6, 3);
  c.max_batch = 3;
  c.parameters = lr.num_parameters();
  const BatchGradients four(lr, t.X, t.y, {0, 1, 2, 3});
  Vector f, s;
  EXPECT_THROW(GradientRelease(c).release(four, rng, f, s), InvalidArgument);
  c.max_batch = 4;
  EXPECT_NO_THROW(GradientRelease(c).release(four, rng, f, s));
}

// docs/proofs/training.md §4: the lattice sum is the same integers for any order of the
// examples, any thread count and any split of the batch, and within a lattice step per example
// of the floating-point weighted sum.
TEST(GradientRelease, LatticeSumIsExactAndSplitIndependent) {
  const Toy t = blobs(300, 7, 4, 23, 1.0);
  SeededRng init(24);
  const Classifier m = Classifier::mlp(7, 20, 4, init);
  std::vector<Eigen::Index> rows(300);
  std::iota(rows.begin(), rows.end(), 0);
  GradientReleaseConfig c;
  c.optimizer = ClassifyOptimizer::dp_adam_jme;
  c.parameters = m.num_parameters();
  c.clip = 0.3;
  c.max_batch = 300;
  const GradientRelease r(c);
  const BatchGradients all(m, t.X, t.y, rows, 1);
  const Vector K = r.lattice_sum(all);
  EXPECT_EQ(K, r.lattice_sum(BatchGradients(m, t.X, t.y, rows, 3)));
  std::vector<Eigen::Index> reversed(rows.rbegin(), rows.rend());
  EXPECT_EQ(K, r.lattice_sum(BatchGradients(m, t.X, t.y, reversed, 2)));
  const std::vector<Eigen::Index> a(rows.begin(), rows.begin() + 117), b(rows.begin() + 117, rows.end());
  EXPECT_EQ(K, Vector(r.lattice_sum(BatchGradients(m, t.X, t.y, a)) +
                      r.lattice_sum(BatchGradients(m, t.X, t.y, b))));
  Vector w1, w2, sum, squares;
  r.clip_weights(all, w1, w2);
  all.weighted_sum(w1, sum, &w2, &squares);
  const Eigen::Index P = m.num_parameters();
  const double u = r.unit(), lambda = std::sqrt(c.lambda);
  // Each example rounds each coordinate by at most half a step.
  EXPECT_LE((K.head(P) * u - sum).cwiseAbs().maxCoeff(), 0.5 * 300 * u * (1 + 1e-9));
  EXPECT_LE((K.tail(P) * u - lambda * squares).cwiseAbs().maxCoeff(), 0.5 * 300 * u * (1 + 1e-9));
  EXPECT_GT(sum.norm(), 1e3 * u);  // not a vacuous comparison
}

TEST(GradientRelease, NoiseHasTheStatedScale) {
  // Zero gradients (one example with all-zero features and the bias at the optimum would still
  // have a gradient), so release an empty batch: the output is pure noise of first_noise_std.
  const Toy t = blobs(10, 4, 2, 9);
  const Classifier m = Classifier::logistic(4, 2);
  const BatchGradients empty(m, t.X, t.y, {});
  GradientReleaseConfig c;
  c.optimizer = ClassifyOptimizer::dp_adam_jme;
  c.parameters = m.num_parameters();
  c.noise_multiplier = 1.5;
  c.expected_batch = 4;
  c.lambda = 2;
  const GradientRelease r(c);
  SeededRng rng(10);
  double s1 = 0, s2 = 0;
  int count = 0;
  for (int rep = 0; rep < 400; ++rep) {
    Vector f, s;
    r.release(empty, rng, f, s);
    s1 += f.squaredNorm();
    s2 += s.squaredNorm();
    count += static_cast<int>(f.size());
  }
  // 4000 draws each: the sample variance is within 10% of the truth with overwhelming probability
  // (relative sd of the estimate ~ sqrt(2/4000) = 2.2%).
  EXPECT_NEAR(std::sqrt(s1 / count) / r.first_noise_std(), 1, 0.1);
  EXPECT_NEAR(std::sqrt(s2 / count) / r.second_noise_std(), 1, 0.1);
  EXPECT_NEAR(r.first_noise_std(), 1.5 * std::sqrt(1 + 2.0) / 4, 1e-4);
  EXPECT_NEAR(r.second_noise_std(), 1.5 * std::sqrt(1 + 2.0) / (std::sqrt(2.0) * 16), 1e-4);
  EXPECT_GE(r.noise_multiplier(), 1.5);
}

TEST(TrainClassifier, NonPrivateAdamLearnsSeparableBlobs) {
  const Toy train = blobs(2000, 10, 4, 11, 0.2), test = blobs(500, 10, 4, 11, 0.2);
  ClassifyOptions o;
  o.optimizer = ClassifyOptimizer::adam;
  o.epochs = 3;
  o.batch_size = 50;
  o.learning_rate = 0.05;  // adam (non-private) may leave n_public out: the row count
  SeededRng rng(12);
  const auto r = train_classifier(Classifier::logistic(10, 4), train.X, train.y, o, rng, nullptr,
                                  {&test.X, &test.y});
  dpstats::testing::expect_guarantee_from_ledger(r);
  EXPECT_FALSE(r.privacy.certified);
  EXPECT_TRUE(std::isinf(r.privacy.epsilon));
  EXPECT_GT(r.diagnostics["test_accuracy"].back().get<double>(), 0.9);
  EXPECT_EQ(r.diagnostics["train_loss"].size(), 3u);
}

namespace {

// The ledger's first five entries are the per-column plan's charges at the planned share s of the
// target's rho (docs/proofs/training.md §3): the Laplace row count and the 3 x d pure selections
// compose (zCDP) to 7/8 of s x rho, the atom count's Gaussian vector takes the other 1/8.
void expect_per_column_plan(const Release<Classifier>& r, int d, double epsilon, double delta) {
  ASSERT_EQ(r.diagnostics["feature_scale_source"].get<std::string>().rfind("private per-column", 0),
            0u);
  const double share = r.diagnostics["scale_share"]["value"].get<double>();
  EXPECT_EQ(r.diagnostics["scale_share"]["source"], "planned");
  const double rho = share * epsilon_delta_to_zcdp(epsilon, delta);
  EXPECT_EQ(r.ledger[0].mechanism, "laplace");
  EXPECT_NE(r.ledger[0].purpose.find("count of the rows"), std::string::npos);
  double selections = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(r.ledger[i].loss.kind, LossKind::pure) << r.ledger[i].purpose;
    EXPECT_EQ(r.ledger[i].count, i == 0 ? 1 : d) << r.ledger[i].purpose;
    selections += r.ledger[i].count * r.ledger[i].loss.epsilon * r.ledger[i].loss.epsilon / 2;
  }
  for (int i = 1; i < 4; ++i) EXPECT_EQ(r.ledger[i].mechanism, "grid_quantile");
  EXPECT_LE(selections, 7.0 / 8 * rho);
  EXPECT_GT(selections, 0.999 * 7.0 / 8 * rho);
  EXPECT_EQ(r.ledger[4].mechanism, "gaussian");
  EXPECT_NE(r.ledger[4].purpose.find("MAD/2"), std::string::npos);
  ASSERT_EQ(r.ledger[4].loss.kind, LossKind::zcdp);
  EXPECT_NEAR(r.ledger[4].loss.rho, rho / 8, 1e-9 * rho);
}

}  // namespace

TEST(TrainClassifier, PrivateVariantsMeetTheirBudgetAndLearn) {
  const Toy train = blobs(4000, 10, 3, 13, 0.2), test = blobs(500, 10, 3, 13, 0.2);
  for (auto opt : {ClassifyOptimizer::dp_sgd, ClassifyOptimizer::dp_adam,
                   ClassifyOptimizer::dp_adam_debiased, ClassifyOptimizer::dp_adam_jme,
                   ClassifyOptimizer::dp_adam_joint_clip}) {
    ClassifyOptions o;
    o.optimizer = opt;
    o.epochs = 2;
    o.batch_size = 100;
    o.n_public = 4000;
    o.privacy = {2.0, 1e-5};
    o.learning_rate = opt == ClassifyOptimizer::dp_sgd ? 0.5 : 0.02;
    SeededRng rng(14);
    const auto r = train_classifier(Classifier::logistic(10, 3), train.X, train.y, o, rng, nullptr,
                                    {&test.X, &test.y});
    dpstats::testing::expect_guarantee_from_ledger(r);
    EXPECT_TRUE(r.privacy.certified) << to_string(opt);
    EXPECT_EQ(r.privacy.accountant, Accountant::pld) << to_string(opt);
    EXPECT_LE(r.privacy.epsilon, 2.0) << to_string(opt);
    EXPECT_GT(r.privacy.epsilon, 1.9) << to_string(opt);
    EXPECT_EQ(r.privacy.neighbouring, Neighbouring::add_remove);
    EXPECT_TRUE(r.seeded);
    // The per-column feature scale (the default plan's first choice: docs/proofs/training.md §3):
    // the row count (add/remove: n is private), the three selections on each of the 10 columns
    // and the atom count; then the steps and the epoch losses.
    ASSERT_EQ(r.ledger.size(), 7u);
    expect_per_column_plan(r, 10, o.privacy.epsilon, o.privacy.delta);
    EXPECT_TRUE(r.ledger[5].loss.discrete);
    EXPECT_NE(r.ledger[5].purpose.find("gradient"), std::string::npos) << r.ledger[5].purpose;
    EXPECT_NE(r.ledger[6].purpose.find("training-loss"), std::string::npos) << r.ledger[6].purpose;
    EXPECT_TRUE(r.diagnostics.contains("epsilon_pld"));
    EXPECT_LE(r.diagnostics["epsilon_pld"].get<double>(),
              r.diagnostics["epsilon_rdp"].get<double>());
    EXPECT_TRUE(r.estimate.parameters().allFinite()) << to_string(opt);
    EXPECT_GT(r.diagnostics["test_accuracy"].back().get<double>(), 0.6) << to_string(opt);
  }
}

TEST(TrainClassifier, NegativeSecondMomentsNeverGiveNaN) {
  // Tiny batch, huge noise: the JME and debiased second moments go negative; the clamp keeps the
  // parameters finite (docs/proofs/training.md).
  const Toy train = blobs(200, 4, 2, 15);
  for (auto opt : {ClassifyOptimizer::dp_adam_jme, ClassifyOptimizer::dp_adam_debiased}) {
    ClassifyOptions o;
    o.optimizer = opt;
    o.epochs = 2;
    o.batch_size = 1;
    o.n_public = 200;
    o.noise_multiplier = 50;
    o.privacy = {100, 1e-5};  // the cap the fixed multiplier must fit in
    SeededRng rng(16);
    const auto r = train_classifier(Classifier::logistic(4, 2), train.X, train.y, o, rng);
    dpstats::testing::expect_guarantee_from_ledger(r);
    EXPECT_TRUE(r.estimate.parameters().allFinite());
  }
}

TEST(TrainClassifier, RejectsBadInput) {
  const Toy t = blobs(50, 3, 2, 17);
  SeededRng rng(18);
  ClassifyOptions o;
  o.privacy = {100, 1e-5};
  o.noise_multiplier = 5;  // fixed (no calibration: keeps the test fast)
  o.batch_size = 10;  // valid, so that each case below fails for its own reason
  o.n_public = 50;
  o.epochs = 1;
  const auto model = Classifier::logistic(3, 2);
  EXPECT_NO_THROW(train_classifier(model, t.X, t.y, o, rng));
  auto bad = o;
  bad.batch_size = 0;
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), InvalidArgument);
  bad = o;
  bad.n_public.reset();  // private training needs the public row count
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), InvalidArgument);
  bad = o;
  bad.batch_size = 51;  // more than n_public
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), InvalidArgument);
  bad = o;
  bad.privacy.epsilon = 0;  // not given
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), InvalidArgument);
  bad = o;
  bad.privacy.delta = 0;  // the Gaussian needs delta > 0
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), InvalidArgument);
  bad = o;
  bad.privacy.epsilon = -1;
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), InvalidArgument);
  bad = o;
  bad.clip = 0;
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), InvalidArgument);
  bad = o;
  bad.feature_scale = -2;
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), InvalidArgument);
  bad = o;
  bad.scale_share = 0.9;
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), InvalidArgument);
  bad = o;
  bad.privacy.epsilon = 0.01;  // z = 5 does not fit in epsilon = 0.01
  bad.feature_scale = 1;       // (else 50 rows at epsilon 0.01 abstain in the plan: no scale)
  EXPECT_THROW(train_classifier(model, t.X, t.y, bad, rng), BudgetExceeded);
  std::vector<int> y = t.y;
  y[3] = 7;
  try {  // the label and its row are data: the message names neither
    train_classifier(model, t.X, y, o, rng);
    ADD_FAILURE() << "an out-of-range label was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).find('7'), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("row 3"), std::string::npos) << e.what();
  }
  RowMatrix X = t.X;
  X(1, 1) = std::nan("");
  EXPECT_THROW(train_classifier(model, X, t.y, o, rng), InvalidArgument);
  EXPECT_THROW(train_classifier(Classifier::logistic(4, 2), t.X, t.y, o, rng), InvalidArgument);
  EXPECT_THROW(parse_enum<ClassifyOptimizer>("sgd"), InvalidArgument);  // the one parser of names
  EXPECT_THROW(parse_enum<ModelKind>("cnn"), InvalidArgument);
}

TEST(TrainClassifier, SeededRunsAreReproducibleWithAndWithoutTheNoiseThread) {
  const Toy train = blobs(1000, 5, 3, 19);
  for (bool thread : {false, true}) {
    ClassifyOptions o;
    o.optimizer = ClassifyOptimizer::dp_adam_jme;
    o.epochs = 1;
    o.batch_size = 50;
    o.n_public = 1000;
    o.noise_multiplier = 1;
    o.privacy = {1e3, 1e-5};
    o.noise_thread = thread;
    SeededRng a(20), b(20), c(21);
    const auto model = Classifier::logistic(5, 3);
    const Vector pa = train_classifier(model, train.X, train.y, o, a).estimate.parameters();
    const Vector pb = train_classifier(model, train.X, train.y, o, b).estimate.parameters();
    const Vector pc = train_classifier(model, train.X, train.y, o, c).estimate.parameters();
    EXPECT_EQ(pa, pb);
    EXPECT_NE(pa, pc);  // a different seed gives different noise
  }
}

// Both noise modes take the tighter of pld and rdp (secure: the lattice Gaussian through the
// coupling of docs/proofs/accounting.md §9, certified; fast_float: continuous, never certified).
TEST(TrainClassifier, AccountantFollowsTheNoiseMode) {
  const Toy train = blobs(2000, 5, 3, 31);
  for (NoiseMode mode : {NoiseMode::secure, NoiseMode::fast_float}) {
    ClassifyOptions o;
    o.optimizer = ClassifyOptimizer::dp_sgd;
    o.epochs = 2;
    o.batch_size = 100;
    o.n_public = 2000;
    o.privacy = {50, 1e-5};  // the cap; the fixed multiplier spends less
    o.noise_multiplier = 1.0;
    o.run.noise = mode;
    SeededRng rng(32);
    const auto r = train_classifier(Classifier::logistic(5, 3), train.X, train.y, o, rng);
    dpstats::testing::expect_guarantee_from_ledger(r);
    EXPECT_LE(r.privacy.epsilon, 50);
    const ClassifyAccount a = classify_account(o, 2000, 1.0, 5);
    // At epsilon 50 the plan standardises each column: the row count, 3 scale entries and the
    // atom counts, the steps, the losses.
    ASSERT_EQ(r.ledger.size(), 7u);
    const LedgerEntry& steps = r.ledger[r.ledger.size() - 2];
    EXPECT_EQ(a.epsilon, std::min(a.pld_epsilon, a.rdp_epsilon));
    EXPECT_LT(a.pld_epsilon, a.rdp_epsilon);
    EXPECT_EQ(r.privacy.accountant, Accountant::pld);
    EXPECT_EQ(steps.loss.discrete, mode == NoiseMode::secure);
    EXPECT_EQ(r.privacy.certified, mode == NoiseMode::secure);
  }
}

// docs/proofs/accounting.md §9: secure training now calibrates on the tighter (PLD) account too,
// so its noise multiplier is below the integer-RDP one, and the ledger it charges is what the
// calibration counted (the guarantee meets the target exactly, not above it).
TEST(TrainClassifier, SecureTrainingSavesNoiseWithThePld) {
  ClassifyOptions o;
  o.optimizer = ClassifyOptimizer::dp_sgd;
  o.epochs = 3;
  o.batch_size = 50;
  o.privacy = {1.0, 1e-5};
  const Eigen::Index n = 5000;
  o.n_public = n;
  const double z = classify_noise_multiplier(o, n, 5);
  const ClassifyAccount a = classify_account(o, n, z, 5);
  EXPECT_LE(a.epsilon, 1.0);
  EXPECT_GT(a.epsilon, 0.999);
  EXPECT_EQ(a.accountant, Accountant::pld);
  EXPECT_GT(a.rdp_epsilon, 1.03);  // integer-order RDP at the same z would claim more
  const Toy train = blobs(n, 5, 3, 39);
  SeededRng rng(40);
  const auto r = train_classifier(Classifier::logistic(5, 3), train.X, train.y, o, rng);
  dpstats::testing::expect_guarantee_from_ledger(r);
  EXPECT_TRUE(r.privacy.certified);
  EXPECT_LE(r.privacy.epsilon, 1.0);
  EXPECT_EQ(r.diagnostics["noise_multiplier"].get<double>() >= z, true);
}

TEST(TrainClassifier, ChargesTheCallersBudget) {
  const Toy train = blobs(4000, 5, 3, 33);  // enough rows for the private feature scale at eps 1
  ClassifyOptions o;
  o.optimizer = ClassifyOptimizer::dp_adam;
  o.epochs = 1;
  o.batch_size = 50;
  o.n_public = 4000;
  o.privacy = {1.0, 1e-5};
  Budget caller(PrivacyLoss::approximate(3, 1e-5), Accountant::rdp);
  SeededRng rng(34);
  const auto r = train_classifier(Classifier::logistic(5, 3), train.X, train.y, o, rng, &caller);
  EXPECT_EQ(caller.ledger().size(), r.ledger.size());
  Budget small(PrivacyLoss::approximate(0.5, 1e-5), Accountant::rdp);
  EXPECT_THROW(train_classifier(Classifier::logistic(5, 3), train.X, train.y, o, rng, &small),
               BudgetExceeded);
  EXPECT_TRUE(small.ledger().empty());
}

// Issue #15: the default's test loss and accuracy do not depend on the features' units
// (pixels in 0..1 vs 0..255: here x 1e-3 and x 1e3), seeded, several seeds.
TEST(TrainClassifier, DefaultIsEquivariantToFeatureUnits) {
  const Toy train = blobs(3000, 8, 3, 35, 0.6), test = blobs(1000, 8, 3, 35, 0.6);
  auto run = [&](double unit, std::uint64_t seed) {
    ClassifyOptions o;  // the default optimizer, clip and learning rate
    o.epochs = 2;
    o.batch_size = 100;
    o.n_public = 3000;
    o.learning_rate = 0.02;
    o.privacy = {2.0, 1e-5};
    const RowMatrix X = train.X * unit, Xt = test.X * unit;
    SeededRng rng(seed);
    const auto r = train_classifier(Classifier::logistic(8, 3), X, train.y, o, rng);
    EXPECT_EQ(r.status, Status::ok);
    return std::pair{r.estimate.mean_loss(Xt, test.y), r.estimate.accuracy(Xt, test.y)};
  };
  double loss[3] = {0, 0, 0}, acc[3] = {0, 0, 0};
  const double units[3] = {1, 1e-3, 1e3};
  for (std::uint64_t seed : {36, 37, 38})
    for (int u = 0; u < 3; ++u) {
      const auto [l, a] = run(units[u], seed);
      loss[u] += l;
      acc[u] += a;
    }
  for (int u = 0; u < 3; ++u)
    std::printf("features x %g: mean test loss %.4f, accuracy %.4f (3 seeds)\n", units[u],
                loss[u] / 3, acc[u] / 3);
  for (int u = 1; u < 3; ++u) {
    EXPECT_LE(loss[u] / loss[0], 1.5) << units[u];
    EXPECT_GE(loss[u] / loss[0], 1 / 1.5) << units[u];
    EXPECT_LE(acc[u] / acc[0], 1.5) << units[u];
    EXPECT_GE(acc[u] / acc[0], 1 / 1.5) << units[u];
  }
  EXPECT_GT(acc[0] / 3, 0.6);
}

// Issue #15, shift and per-column units: on a table with enough rows for the per-column private
// scale (12000 x 4), the default's test loss and accuracy, on the data as given, stay within 1.5x
// of the plain table's when the data are multiplied by 1e-3 or 1e3, when each column gets its
// own unit (1e-3, 1, 1e3, 1e6), and when they are shifted by 1e4 x each column's sd (the loss is
// the data's own measure: predictions do not depend on units). Seeded, three seeds.
TEST(TrainClassifier, DefaultIsEquivariantToShiftAndColumnUnits) {
  const Toy train = blobs(12000, 4, 3, 51, 0.6), test = blobs(2000, 4, 3, 51, 0.6);
  Vector sd(4);
  for (Eigen::Index j = 0; j < 4; ++j) {
    const auto c = train.X.col(j).array();
    sd(j) = std::sqrt((c - c.mean()).square().mean());
  }
  auto transform = [&](const RowMatrix& X, int kind) -> RowMatrix {
    const Vector units = Vector::LinSpaced(4, -3, 6).unaryExpr([](double e) {
      return std::pow(10.0, e); });
    switch (kind) {
      case 1: return X * 1e-3;
      case 2: return X * 1e3;
      case 3: return X * units.asDiagonal();
      case 4: return X.rowwise() + 1e4 * sd.transpose();
      default: return X;
    }
  };
  const char* names[] = {"as given", "x 1e-3", "x 1e3", "column units", "shift 1e4 sd"};
  double loss[5] = {}, acc[5] = {};
  for (std::uint64_t seed : {52, 53, 54})
    for (int k = 0; k < 5; ++k) {
      ClassifyOptions o;  // the default optimizer, clip, scale
      o.epochs = 2;
      o.batch_size = 200;
      o.n_public = 12000;
      o.learning_rate = 0.02;
      o.privacy = {2.0, 1e-5};
      const RowMatrix X = transform(train.X, k), Xt = transform(test.X, k);
      SeededRng rng(seed);
      const auto r = train_classifier(Classifier::logistic(4, 3), X, train.y, o, rng);
      dpstats::testing::expect_guarantee_from_ledger(r);
      ASSERT_EQ(r.status, Status::ok);
      ASSERT_TRUE(r.diagnostics.contains("feature_centre")) << "per-column scale not planned";
      loss[k] += r.estimate.mean_loss(Xt, test.y) / 3;
      acc[k] += r.estimate.accuracy(Xt, test.y) / 3;
    }
  for (int k = 0; k < 5; ++k)
    std::printf("training, %s: mean test loss %.4f, accuracy %.4f (3 seeds)\n", names[k], loss[k],
                acc[k]);
  for (int k = 1; k < 5; ++k) {
    EXPECT_LE(loss[k] / loss[0], 1.5) << names[k];
    EXPECT_GE(loss[k] / loss[0], 1 / 1.5) << names[k];
    EXPECT_LE(acc[k] / acc[0], 1.5) << names[k];
    EXPECT_GE(acc[k] / acc[0], 1 / 1.5) << names[k];
  }
  EXPECT_GT(acc[0], 0.7);  // three overlapping blobs: chance is 1/3
}

// docs/proofs/accounting.md §8: a lattice-Gaussian step is counted by rdp on the integer orders
// only (the pld accountant counts it through the coupling of §9, test_pld.cpp).
TEST(Accounting, DiscreteSubsampledGaussianUsesIntegerOrdersOnly) {
  const double q = 0.01, z = 0.9, delta = 1e-6;
  const int steps = 3000;
  const LedgerEntry e{"gaussian", "step", 1, z,
                      PrivacyLoss::subsampled_discrete_gaussian(q, z), steps};
  Budget b(PrivacyLoss::approximate(1e12, delta), Accountant::rdp);
  b.spend(e);
  std::vector<double> orders, curve;
  for (double a : accounting_rdp_orders())
    if (a == std::floor(a)) {
      orders.push_back(a);
      curve.push_back(steps * subsampled_gaussian_rdp(q, z, a));
    }
  EXPECT_EQ(b.spent_epsilon_delta().epsilon, rdp_to_epsilon(orders, curve, delta).epsilon);
  Budget continuous(PrivacyLoss::approximate(1e12, delta), Accountant::rdp);
  continuous.spend({"gaussian", "step", 1, z, PrivacyLoss::subsampled_gaussian(q, z), steps});
  EXPECT_LE(continuous.spent_epsilon_delta().epsilon, b.spent_epsilon_delta().epsilon);
  EXPECT_NE(e.loss.describe().find("discrete"), std::string::npos);
}

// docs/results/real-data.md (training): columns in different units (age in years, salary in
// dollars, log-normal), 5% corrupted rows at (999, 9.9e6) with random labels; the label is
// 1[(age - 40)/12 + (salary - 50000)/20000 + N(0, 0.5^2) > 0]. Test accuracy on clean rows.
TEST(TrainClassifier, RealisticTableDefaultVersusUnitScale) {
  auto table = [](Eigen::Index n, std::uint64_t seed, bool corrupt) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> unif;
    Toy t{RowMatrix(n, 2), std::vector<int>(static_cast<std::size_t>(n))};
    for (Eigen::Index i = 0; i < n; ++i) {
      const double age = 40 + 12 * normal(gen);
      const double salary = 50000 * std::exp(0.4 * normal(gen) - 0.08);
      t.X(i, 0) = age;
      t.X(i, 1) = salary;
      t.y[static_cast<std::size_t>(i)] =
          (age - 40) / 12 + (salary - 50000) / 20000 + 0.5 * normal(gen) > 0;
      if (corrupt && unif(gen) < 0.05) {
        t.X(i, 0) = 999;
        t.X(i, 1) = 9.9e6;
        t.y[static_cast<std::size_t>(i)] = unif(gen) < 0.5;
      }
    }
    return t;
  };
  const Toy train = table(20000, 41, true), test = table(5000, 42, false);
  double acc[2] = {0, 0};
  for (int before = 0; before < 2; ++before)
    for (std::uint64_t seed : {43, 44, 45}) {
      ClassifyOptions o;
      o.epochs = 3;
      o.batch_size = 200;
      o.n_public = 20000;
      o.learning_rate = 0.02;
      o.privacy = {1.0, 1e-6};
      if (before) o.feature_scale = 1.0;  // the old behaviour: raw units, clip 1
      SeededRng rng(seed);
      const auto r = train_classifier(Classifier::logistic(2, 2), train.X, train.y, o, rng);
      dpstats::testing::expect_guarantee_from_ledger(r);
      ASSERT_EQ(r.status, Status::ok);
      acc[before] += r.estimate.accuracy(test.X, test.y) / 3;
    }
  std::printf("realistic table: test accuracy default %.4f, unit scale (before) %.4f\n", acc[0],
              acc[1]);
  // The per-column private median and robust sd put age and salary in the same units (one global
  // scale, the previous default, left age at ~1e-3 of unit scale: 0.705); the raw-unit run is at
  // chance.
  EXPECT_GT(acc[0], 0.85);
  EXPECT_GE(acc[0], acc[1] + 0.1);
}

// Issue 28: under add/remove the row count is private. With n_public given, the sampling rate,
// the steps, the noise multiplier, the sensitivity and the ledger are the same whether the table
// has one row fewer or one more, and no timing or batch total enters the release.
TEST(TrainClassifier, PublicFieldsDoNotDependOnTheRowCount) {
  const Toy t = blobs(601, 4, 3, 61);
  auto run = [&](Eigen::Index rows) {
    ClassifyOptions o;
    o.optimizer = ClassifyOptimizer::dp_adam_jme;
    o.epochs = 2;
    o.batch_size = 60;
    o.n_public = 600;
    o.privacy = {8.0, 1e-6};
    o.scale_share = 0.5;  // 600 rows at epsilon 8: the per-column scale is planned (not an abstention)
    SeededRng rng(62);
    const std::vector<int> y(t.y.begin(), t.y.begin() + rows);
    return train_classifier(Classifier::logistic(4, 3), t.X.topRows(rows), y, o, rng);
  };
  const auto a = run(599), b = run(600), c = run(601);
  for (const auto* r : {&a, &b, &c}) ASSERT_EQ(r->status, Status::ok) << r->diagnostics.dump();
  for (const char* key : {"sampling_rate", "steps", "noise_multiplier", "sensitivity",
                          "first_noise_std", "n_public", "epsilon_pld", "epsilon_rdp"}) {
    EXPECT_EQ(a.diagnostics[key], b.diagnostics[key]) << key;
    EXPECT_EQ(b.diagnostics[key], c.diagnostics[key]) << key;
  }
  EXPECT_EQ(b.diagnostics["sampling_rate"].get<double>(), 0.1);
  EXPECT_EQ(ledger_json(a.ledger), ledger_json(b.ledger));
  EXPECT_EQ(ledger_json(b.ledger), ledger_json(c.ledger));
  for (const auto* r : {&a, &b, &c}) {
    EXPECT_FALSE(r->diagnostics.contains("examples_per_second"));
    EXPECT_FALSE(r->diagnostics.contains("train_seconds"));
  }
  // The loss releases' entry is the mechanism that draws them: sensitivity Q on the lattice of
  // lattice_rows(n_public) rows.
  const LedgerEntry& loss = b.ledger.back();
  EXPECT_EQ(loss.count, 2);
  EXPECT_EQ(loss.sensitivity, exact::box_quantum(lattice_rows(600)));
}

// A table larger than n_public's lattice allows is refused before any noise (public limits
// only: the message names n_public and the limit, not the row count).
TEST(TrainClassifier, LatticeRowsFollowThePublicCount) {
  EXPECT_EQ(lattice_rows(600), (1 << 22) - 1);
  EXPECT_EQ(lattice_rows(3'000'000), 6'000'000);
  EXPECT_EQ(lattice_rows(std::int64_t{1} << 39), (std::int64_t{1} << 40) - 1);
}

// Issue 28: an accuracy on the training rows is an exact statistic of the private data; the
// release says so (decided from public facts: the same memory, or the caller's word).
TEST(TrainClassifier, AccuracyOnTheTrainingRowsIsFlagged) {
  const Toy t = blobs(400, 3, 2, 63), held = blobs(200, 3, 2, 64);
  ClassifyOptions o;
  o.epochs = 1;
  o.batch_size = 40;
  o.n_public = 400;
  o.privacy = {1.0, 1e-6};
  o.feature_scale = 2;
  for (int k = 0; k < 3; ++k) {
    SeededRng rng(65);
    const EvalSet test = k == 0   ? EvalSet{&held.X, &held.y}
                         : k == 1 ? EvalSet{&t.X, &t.y}
                                  : EvalSet{&held.X, &held.y, true};
    const auto r = train_classifier(Classifier::logistic(3, 2), t.X, t.y, o, rng, nullptr, test);
    EXPECT_EQ(r.diagnostics.contains("test_accuracy_warning"), k > 0) << k;
  }
}
