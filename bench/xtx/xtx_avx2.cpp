// The unit of issue 17 item 5: one Eigen XᵀX pass (symmetric rank update) compiled for AVX2 + FMA,
// on 1 thread and on T threads (row blocks, one rank update each, then the d × d partials added).
// A separate program on purpose: Eigen picks its SIMD width at compile time, and linking an AVX2
// copy of Eigen's kernels into the portable library's binary would let the linker mix the two.
// Data: iid N(0, 1) (the pass's cost does not depend on the values). Prints one JSON line per
// (n, d, threads): the best of `reps` wall times in seconds.
//   bench_xtx_avx2 N D THREADS [REPS]
#include <Eigen/Dense>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Eigen::MatrixXd gram(const RowMatrix& X, int threads) {
  const Eigen::Index n = X.rows(), d = X.cols();
  std::vector<Eigen::MatrixXd> part(static_cast<std::size_t>(threads), Eigen::MatrixXd::Zero(d, d));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const Eigen::Index lo = n * t / threads, hi = n * (t + 1) / threads;
      part[t].selfadjointView<Eigen::Lower>().rankUpdate(X.middleRows(lo, hi - lo).transpose());
    });
  for (auto& th : pool) th.join();
  for (int t = 1; t < threads; ++t) part[0] += part[t];
  return part[0];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_xtx_avx2 N D THREADS [REPS]\n");
    return 2;
  }
  const long n = std::atol(argv[1]), d = std::atol(argv[2]);
  const int threads = std::atoi(argv[3]), reps = argc > 4 ? std::atoi(argv[4]) : 5;
  if (n < 1 || d < 1 || threads < 1 || reps < 1) {
    std::fprintf(stderr, "bench_xtx_avx2: N, D, THREADS, REPS must be >= 1\n");
    return 2;
  }
  RowMatrix X(n, d);
  std::mt19937_64 g(static_cast<unsigned long>(n * 1000 + d));
  std::normal_distribution<double> z;
  for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = z(g);
  double best = 1e300, check = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const Eigen::MatrixXd G = gram(X, threads);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
    check += G(d - 1, 0);
  }
  std::printf("{\"n\": %ld, \"d\": %ld, \"threads\": %d, \"seconds\": %.6f, \"simd\": \"%s\", \"check\": %g}\n",
              n, d, threads, best, Eigen::SimdInstructionSetsInUse(), check);
  return 0;
}
