// What bounds the scale layer's data passes (docs/benchmarks.md "The scale layer in XᵀX passes"):
// in one process, on the same N x D rows (iid N(0, 1), row-major), the best of REPS wall times of
//   stream  : one read of every value (a sum): the memory's floor for any pass;
//   scatter : one histogram per column on the signed log grid with 32 points per octave (the
//             coarse median's grid: 130 948 bins a column, laid out as the library lays them
//             out), each value's bin read off its bits and incremented: the floor of a pass that
//             counts every value into a full-resolution grid;
//   xtx     : one Eigen XᵀX pass (rank update) in the same build (AVX2 + FMA), the unit.
// Prints one JSON line. Data in memory: the file's page faults are not included.
//   bench_scatter_floor N D [REPS]
#include <Eigen/Dense>
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr std::int64_t kBins = 2 * (2046 * 32 + 1) + 2;  // the signed 32-per-octave grid's bins

// The bin's key on that grid up to a constant: sign-folded bits, 5 mantissa bits per octave.
inline std::int64_t key(double x) {
  const auto u = std::bit_cast<std::uint64_t>(x + 0.0);
  const std::uint64_t mask = 0 - (u >> 63);
  const std::uint64_t v = (std::uint64_t{1} << 63) + ((u & ~(std::uint64_t{1} << 63)) ^ mask) + (u >> 63);
  const auto k = static_cast<std::int64_t>((v >> 47) & 0x1ffff);
  return std::min(k, kBins - 1);
}

template <class F>
double best_of(int reps, F f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_scatter_floor N D [REPS]\n");
    return 2;
  }
  const long n = std::atol(argv[1]), d = std::atol(argv[2]);
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  if (n < 1 || d < 1 || reps < 1) {
    std::fprintf(stderr, "bench_scatter_floor: N, D, REPS must be >= 1\n");
    return 2;
  }
  RowMatrix X(n, d);
  std::mt19937_64 g(static_cast<unsigned long>(n * 1000 + d));
  std::normal_distribution<double> z;
  for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = z(g);
  double check = 0;
  const double stream = best_of(reps, [&] { check += X.sum(); });
  std::vector<std::uint32_t> bins(static_cast<std::size_t>(d * kBins));
  const double scatter = best_of(reps, [&] {
    for (long r = 0; r < n; ++r) {
      const double* row = X.data() + r * d;
      for (long j = 0; j < d; ++j) ++bins[static_cast<std::size_t>(j * kBins + key(row[j]))];
    }
  });
  check += bins[static_cast<std::size_t>(key(0.5))];
  const double xtx = best_of(reps, [&] {
    Eigen::MatrixXd G = Eigen::MatrixXd::Zero(d, d);
    G.selfadjointView<Eigen::Lower>().rankUpdate(X.transpose());
    check += G(d - 1, 0);
  });
  std::printf("{\"n\": %ld, \"d\": %ld, \"stream\": %.4f, \"scatter\": %.4f, \"xtx\": %.4f, "
              "\"scatter_per_xtx\": %.3f, \"check\": %g}\n",
              n, d, stream, scatter, xtx, scatter / xtx, check);
  return 0;
}
