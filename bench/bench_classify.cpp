// Private training throughput (issue 6): examples/s of DP-Adam variants against non-private Adam
// on the same data, model and Poisson batches, in the same run. Fashion-MNIST (60000 x 784)
// when installed, else a synthetic stand-in of the same shape. Anchor: Opacus is 2.6-8x slower
// than non-private training.
#include <benchmark/benchmark.h>

#include "dpstats/data/fashion_mnist.hpp"
#include "dpstats/training/train_classifier.hpp"
#include "dpstats/random/rng.hpp"

using namespace dpstats;
using namespace dpstats::optimize;

namespace {

const LabelledImages& train_data() {
  static const LabelledImages d = [] {
    if (fashion_mnist_available()) return load_fashion_mnist().train;
    LabelledImages s;
    SeededRng rng(1);
    s.images.resize(60000, 784);
    for (Eigen::Index i = 0; i < s.images.size(); ++i) s.images.data()[i] = rng.uniform01();
    for (int i = 0; i < 60000; ++i) s.labels.push_back(static_cast<int>(rng.uniform_below(10)));
    return s;
  }();
  return d;
}

// args: optimizer, model (0 logistic, 1 mlp with 128 hidden), noise thread (0/1), compute threads
void BM_ClassifyEpoch(benchmark::State& state) {
  const auto opt = static_cast<ClassifyOptimizer>(state.range(0));
  const bool mlp = state.range(1) == 1;
  const auto& d = train_data();
  ClassifyOptions o;
  o.optimizer = opt;
  o.epochs = 1;
  o.batch_size = 256;
  o.n_public = d.images.rows();  // Fashion-MNIST's published 60000
  if (is_private(opt)) {
    o.noise_multiplier = 1.0;
    o.privacy = {1e6, 1e-6};  // a cap the fixed multiplier fits in (timing only)
    o.feature_scale = 1.0;    // pixels in [0, 1], public
  }
  o.noise_thread = state.range(2) == 1;
  o.run.threads = static_cast<int>(state.range(3));
  double examples = 0, seconds = 0;
  for (auto _ : state) {
    SeededRng rng(7), init(8);
    const auto model = mlp ? Classifier::mlp(784, 128, 10, init) : Classifier::logistic(784, 10);
    // The timing and the batch totals are the caller's (EpochReport), never in the release.
    train_classifier(model, d.images, d.labels, o, rng, nullptr, {},
                     [&](const EpochReport& e) {
                       seconds += e.seconds;
                       examples += static_cast<double>(e.examples);
                     });
  }
  state.counters["examples_per_s"] = examples / seconds;  // training steps only (no evaluation)
  state.SetLabel(std::string(to_string(opt)) + (mlp ? " mlp" : " logistic") +
                 (state.range(2) ? " noise-thread" : "") +
                 (state.range(3) > 1 ? " 2-threads" : ""));
}

void Args(benchmark::internal::Benchmark* b) {
  // One core each (no noise thread, 1 compute thread), then both cores for every variant: the
  // private ones draw the next step's noise on the second core while one thread computes, or
  // also compute on two threads (three threads on two cores); non-private Adam computes on two.
  for (int model : {0, 1}) {
    for (int cores : {1, 2}) {
      b->Args({static_cast<int>(ClassifyOptimizer::adam), model, 0, cores});
      for (auto opt : {ClassifyOptimizer::dp_sgd, ClassifyOptimizer::dp_adam,
                       ClassifyOptimizer::dp_adam_jme, ClassifyOptimizer::dp_adam_joint_clip}) {
        b->Args({static_cast<int>(opt), model, cores == 2 ? 1 : 0, 1});
        if (cores == 2) b->Args({static_cast<int>(opt), model, 1, 2});
      }
    }
  }
}

}  // namespace

BENCHMARK(BM_ClassifyEpoch)->Apply(Args)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
