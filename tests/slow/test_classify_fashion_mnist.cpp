// Private training on Fashion-MNIST (issue targets; docs/results/jme.md): a
// non-private model reaches >= 80% test accuracy, and DP-Adam-JME at epsilon = 1.7 (delta = 1e-6)
// reaches >= 75% and is within 2 points of debiased DP-Adam. Seeded; skipped when the Debian
// package dataset-fashion-mnist is missing.
#include <gtest/gtest.h>

#include <cstdio>

#include "dpstats/data/fashion_mnist.hpp"
#include "dpstats/training/train_classifier.hpp"
#include "dpstats/random/rng.hpp"

using namespace dpstats;
using namespace dpstats::optimize;

namespace {

const FashionMnist& data() {
  static const FashionMnist d = load_fashion_mnist();
  return d;
}

double final_accuracy(ClassifyOptimizer opt, int epochs, std::uint64_t seed) {
  ClassifyOptions o;
  o.optimizer = opt;
  o.epochs = epochs;
  o.batch_size = 256;
  o.n_public = 60000;  // the dataset's published size
  o.learning_rate = 1e-3;
  if (is_private(opt)) {
    o.privacy = {1.7, 1e-6};
    o.feature_scale = 1.0;  // the paper's units (pixels in [0, 1]; the paper's Table 4's lr and clip)
  }
  SeededRng rng(seed);
  const auto r = train_classifier(Classifier::logistic(784, 10), data().train.images,
                                  data().train.labels, o, rng, nullptr,
                                  {&data().test.images, &data().test.labels});
  if (is_private(opt)) {
    EXPECT_LE(r.privacy.epsilon, 1.7);
    EXPECT_TRUE(r.privacy.certified);
  }
  return r.diagnostics["test_accuracy"].back().get<double>();
}

}  // namespace

TEST(ClassifyFashionMnist, NonPrivateLogisticReaches80Percent) {
  if (!fashion_mnist_available()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  EXPECT_GE(final_accuracy(ClassifyOptimizer::adam, 3, 1), 0.80);
}

TEST(ClassifyFashionMnist, JmeAdamAtEpsilon1_7MeetsTheIssueTargets) {
  if (!fashion_mnist_available()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const double jme = final_accuracy(ClassifyOptimizer::dp_adam_jme, 3, 2);
  const double debiased = final_accuracy(ClassifyOptimizer::dp_adam_debiased, 3, 2);
  EXPECT_GE(jme, 0.75);
  EXPECT_GE(jme, debiased - 0.02);
}

// The MLP in the paper's units (pixels in [0, 1], feature_scale 1, as the logistic tests above and
// docs/results/jme.md): one epoch at epsilon 1.7 reaches 0.7 (measured 0.758 through the tool,
// hidden 64). With the default private feature scale (the 0.9-quantile of the row norms, about
// 17.5 pixels) the features are 17.5x smaller at the same learning rate and one epoch reaches
// only 0.62-0.64: that, not the per-example gradients, was this test's failure (issue 28).
TEST(ClassifyFashionMnist, MlpPerExampleGradientsTrainPrivately) {
  if (!fashion_mnist_available()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  ClassifyOptions o;
  o.optimizer = ClassifyOptimizer::dp_adam_jme;
  o.epochs = 1;
  o.n_public = 60000;
  o.feature_scale = 1.0;
  o.privacy = {1.7, 1e-6};
  SeededRng rng(3), init(4);
  const auto r = train_classifier(Classifier::mlp(784, 64, 10, init), data().train.images,
                                  data().train.labels, o, rng, nullptr,
                                  {&data().test.images, &data().test.labels});
  EXPECT_GE(r.diagnostics["test_accuracy"].back().get<double>(), 0.7);
}

// Issue 27 item 6: the default private feature scale costs at most one point of test accuracy
// against the public pixel scale (feature_scale = 1), at epsilon = 1.7, the default 10 epochs,
// batch 256 and learning rate; mean of three seeds each, measured in one run. The default plan
// standardises each column (its share planned from n, d and the budget; docs/proofs/training.md
// §3): the border pixels, mostly 0, are degenerate and take the resolved columns' scale. (The
// old default, one scale from the 0.9-quantile of the row norms, reached 76.1% against
// 82.3-82.5%.)
TEST(ClassifyFashionMnist, DefaultPrivateScaleCostsAtMostOnePoint) {
  if (!fashion_mnist_available()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  double accuracy[2] = {0, 0};  // default, public
  for (int pub = 0; pub < 2; ++pub)
    for (std::uint64_t seed : {1, 2, 3}) {
      ClassifyOptions o;
      o.privacy = {1.7, 1e-6};
      o.n_public = 60000;  // the dataset's published size
      if (pub) o.feature_scale = 1.0;
      SeededRng rng(seed);
      const auto r = train_classifier(Classifier::logistic(784, 10), data().train.images,
                                      data().train.labels, o, rng, nullptr,
                                      {&data().test.images, &data().test.labels});
      ASSERT_EQ(r.status, Status::ok);
      EXPECT_LE(r.privacy.epsilon, 1.7);
      accuracy[pub] += r.diagnostics["test_accuracy"].back().get<double>() / 3;
      if (pub) continue;
      ASSERT_EQ(r.diagnostics["feature_scale_source"].get<std::string>(),
                "private per-column median and robust sd (scale layer)");
      std::printf("seed %llu: scale_share %.3f, %zu of 784 columns degenerate, accuracy %.4f\n",
                  static_cast<unsigned long long>(seed),
                  r.diagnostics["scale_share"]["value"].get<double>(),
                  r.diagnostics.value("feature_degenerate_columns", nlohmann::json::array()).size(),
                  r.diagnostics["test_accuracy"].back().get<double>());
    }
  std::printf("Fashion-MNIST, eps 1.7, 3 seeds: default %.4f, feature_scale 1 %.4f\n",
              accuracy[0], accuracy[1]);
  EXPECT_GE(accuracy[0], accuracy[1] - 0.01);
}
