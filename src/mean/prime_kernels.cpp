#include "prime_kernels.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "dpstats/parallel.hpp"
#include <vector>

namespace dpstats::mean_detail {
namespace {

// Rows [b, e) of the list (or of X when rows is empty): G += Σ x xᵀ (upper triangle), s += Σ x.
// Four rows at a time so that each G row is loaded and stored once per four data rows.
__attribute__((always_inline)) inline void gram_body(const double* X, std::int64_t ld, int d,
                                                     const std::uint32_t* rows, std::int64_t b,
                                                     std::int64_t e, double* G, double* s) {
  auto row = [&](std::int64_t r) {
    const std::int64_t i = rows ? static_cast<std::int64_t>(rows[r]) : r;
    return X + i * ld;
  };
  std::int64_t r = b;
  for (; r + 4 <= e; r += 4) {
    const double* x0 = row(r);
    const double* x1 = row(r + 1);
    const double* x2 = row(r + 2);
    const double* x3 = row(r + 3);
    for (int a = 0; a < d; ++a) {
      const double a0 = x0[a], a1 = x1[a], a2 = x2[a], a3 = x3[a];
      double* g = G + static_cast<std::int64_t>(a) * d;
      for (int c = a; c < d; ++c) g[c] += (a0 * x0[c] + a1 * x1[c]) + (a2 * x2[c] + a3 * x3[c]);
      s[a] += (a0 + a1) + (a2 + a3);
    }
  }
  for (; r < e; ++r) {
    const double* x0 = row(r);
    for (int a = 0; a < d; ++a) {
      const double a0 = x0[a];
      double* g = G + static_cast<std::int64_t>(a) * d;
      for (int c = a; c < d; ++c) g[c] += a0 * x0[c];
      s[a] += a0;
    }
  }
}

// Four rows at a time, 16 output columns at a time (P padded with zero columns to a multiple of
// 16), in single precision: the scores only rank rows and pick histogram bins, and their privacy
// needs determinism per row, not accuracy. Every row goes through the same four-row code (a
// short last group repeats its last row and drops the extra outputs), and each of the four slots
// runs the same operations — t_j = Σ_k c_k P_kj in k order, then τ = Σ_j t_j² in j order — so
// identical rows get bit-identical scores wherever they sit.
typedef float v8f __attribute__((vector_size(32)));

__attribute__((always_inline)) inline void score_body(const double* X, std::int64_t ld, int d,
                                                      int dp, const std::uint32_t* rows,
                                                      std::int64_t b, std::int64_t e,
                                                      const float* P, const double* mu,
                                                      double* tau, float* c) {
  auto row = [&](std::int64_t r) {
    return X + (rows ? static_cast<std::int64_t>(rows[r]) : r) * ld;
  };
  for (std::int64_t r = b; r < e; r += 4) {
    const int valid = static_cast<int>(std::min<std::int64_t>(4, e - r));
    for (int s = 0; s < 4; ++s) {
      const double* x = row(r + std::min(s, valid - 1));
      for (int k = 0; k < d; ++k) c[s * d + k] = static_cast<float>(x[k] - mu[k]);
    }
    float t[4] = {0, 0, 0, 0};
    for (int j0 = 0; j0 < dp; j0 += 16) {
      v8f a00 = {}, a01 = {}, a10 = {}, a11 = {}, a20 = {}, a21 = {}, a30 = {}, a31 = {};
      for (int k = 0; k < d; ++k) {
        const float* pk = P + static_cast<std::int64_t>(k) * dp + j0;
        v8f p0, p1;
        std::memcpy(&p0, pk, sizeof p0);
        std::memcpy(&p1, pk + 8, sizeof p1);
        const float c0 = c[k], c1 = c[d + k], c2 = c[2 * d + k], c3 = c[3 * d + k];
        a00 += c0 * p0;
        a01 += c0 * p1;
        a10 += c1 * p0;
        a11 += c1 * p1;
        a20 += c2 * p0;
        a21 += c2 * p1;
        a30 += c3 * p0;
        a31 += c3 * p1;
      }
      const int jw = d - j0 < 16 ? d - j0 : 16;
      float acc[4][16];
      std::memcpy(acc[0], &a00, 32);
      std::memcpy(acc[0] + 8, &a01, 32);
      std::memcpy(acc[1], &a10, 32);
      std::memcpy(acc[1] + 8, &a11, 32);
      std::memcpy(acc[2], &a20, 32);
      std::memcpy(acc[2] + 8, &a21, 32);
      std::memcpy(acc[3], &a30, 32);
      std::memcpy(acc[3] + 8, &a31, 32);
      for (int s = 0; s < 4; ++s)
        for (int jj = 0; jj < jw; ++jj) t[s] += acc[s][jj] * acc[s][jj];
    }
    for (int s = 0; s < valid; ++s) tau[r + s] = t[s];
  }
}

// The bodies compiled twice: for AVX2 + FMA and for the baseline, chosen once at run time.
__attribute__((target("avx2,fma"))) void gram_avx2(const double* X, std::int64_t ld, int d,
                                                   const std::uint32_t* rows, std::int64_t b,
                                                   std::int64_t e, double* G, double* s) {
  gram_body(X, ld, d, rows, b, e, G, s);
}
void gram_base(const double* X, std::int64_t ld, int d, const std::uint32_t* rows,
               std::int64_t b, std::int64_t e, double* G, double* s) {
  gram_body(X, ld, d, rows, b, e, G, s);
}
__attribute__((target("avx2,fma"))) void score_avx2(const double* X, std::int64_t ld, int d,
                                                    int dp, const std::uint32_t* rows,
                                                    std::int64_t b, std::int64_t e,
                                                    const float* P, const double* mu, double* tau,
                                                    float* c) {
  score_body(X, ld, d, dp, rows, b, e, P, mu, tau, c);
}
void score_base(const double* X, std::int64_t ld, int d, int dp, const std::uint32_t* rows,
                std::int64_t b, std::int64_t e, const float* P, const double* mu, double* tau,
                float* c) {
  score_body(X, ld, d, dp, rows, b, e, P, mu, tau, c);
}
bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
void gram_block(const double* X, std::int64_t ld, int d, const std::uint32_t* rows,
                std::int64_t b, std::int64_t e, double* G, double* s) {
  (have_avx2() ? gram_avx2 : gram_base)(X, ld, d, rows, b, e, G, s);
}
void score_block(const double* X, std::int64_t ld, int d, int dp, const std::uint32_t* rows,
                 std::int64_t b, std::int64_t e, const float* P, const double* mu, double* tau,
                 float* c) {
  (have_avx2() ? score_avx2 : score_base)(X, ld, d, dp, rows, b, e, P, mu, tau, c);
}

// G's upper triangle += the 4 x 8 tile t (row-major) at rows a0.., columns c0.. (entries beyond d
// or below the diagonal dropped).
void add_tile(const double* t, int a0, int c0, int d, double* G) {
  for (int i = 0; i < 4 && a0 + i < d; ++i) {
    double* g = G + static_cast<std::int64_t>(a0 + i) * d;
    for (int k = std::max(0, a0 + i - c0); k < 8 && c0 + k < d; ++k) g[c0 + k] += t[i * 8 + k];
  }
}

// The Gram matrix of m rows B (row stride dp, a multiple of 8, zero from column d on) added to
// G's upper triangle, their sum to s: tiles of 4 x 8 entries, each summed over the m rows in
// registers and added to G once (the 4-row kernel above loads and stores every G row per four
// rows). Every product and partial sum is exact (the header's conditions, so a fused
// multiply-add rounds nothing either): the same G as any other order of the additions.
__attribute__((target("avx2,fma"))) void gram_tiles_avx2(const double* B, int m, int d, int dp,
                                                         double* G, double* s) {
  for (int a0 = 0; a0 < d; a0 += 4)
    for (int c0 = a0 / 8 * 8; c0 < d; c0 += 8) {
      __m256d acc[8];
      for (auto& v : acc) v = _mm256_setzero_pd();
      for (int r = 0; r < m; ++r) {
        const double* x = B + static_cast<std::int64_t>(r) * dp;
        const __m256d lo = _mm256_loadu_pd(x + c0), hi = _mm256_loadu_pd(x + c0 + 4);
        for (int i = 0; i < 4; ++i) {
          const __m256d ai = _mm256_broadcast_sd(x + a0 + i);
          acc[2 * i] = _mm256_fmadd_pd(ai, lo, acc[2 * i]);
          acc[2 * i + 1] = _mm256_fmadd_pd(ai, hi, acc[2 * i + 1]);
        }
      }
      double t[32];
      for (int k = 0; k < 8; ++k) _mm256_storeu_pd(t + 4 * k, acc[k]);
      add_tile(t, a0, c0, d, G);
    }
  for (int r = 0; r < m; ++r)
    for (int a = 0; a < d; ++a) s[a] += B[static_cast<std::int64_t>(r) * dp + a];
}
void gram_tiles_base(const double* B, int m, int d, int dp, double* G, double* s) {
  for (int a0 = 0; a0 < d; a0 += 4)
    for (int c0 = a0 / 8 * 8; c0 < d; c0 += 8) {
      double t[32] = {};
      for (int r = 0; r < m; ++r) {
        const double* x = B + static_cast<std::int64_t>(r) * dp;
        for (int i = 0; i < 4; ++i)
          for (int k = 0; k < 8; ++k) t[i * 8 + k] += x[a0 + i] * x[c0 + k];
      }
      add_tile(t, a0, c0, d, G);
    }
  for (int r = 0; r < m; ++r)
    for (int a = 0; a < d; ++a) s[a] += B[static_cast<std::int64_t>(r) * dp + a];
}

// Ranges of at least 4096 rows on up to `threads` threads (the library's parallel_ranges, whose
// part count is the `used` computed below).
template <class F>
void parallel_rows(std::int64_t count, int threads, F&& f) {
  parallel_ranges(count, threads, 4096, std::forward<F>(f));
}

// Rows per block of recomputed processed rows (a few KiB: the block stays in L1/L2 while the
// kernel reads it).
constexpr std::int64_t kBlockRows = 32;

// G += sign · Σ x xᵀ and s += sign · Σ x over `count` rows, where block(idx, b, e, g, s) adds rows
// [b, e) of the list into one part's g and s; parts are summed in part order.
template <class Block>
void gram_parts(int d, std::int64_t count, double sign, double* G, double* s, int threads,
                Block&& block) {
  if (count == 0) return;
  const std::size_t dd = static_cast<std::size_t>(d) * d;
  const int used = static_cast<int>(
      std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, count / 4096)));
  std::vector<double> parts(static_cast<std::size_t>(used) * (dd + d), 0.0);
  parallel_rows(count, used, [&](int t, std::int64_t b, std::int64_t e) {
    double* g = parts.data() + static_cast<std::size_t>(t) * (dd + d);
    block(b, e, g, g + dd);
  });
  // Exact: every term is an integer multiple of q² below 2^53 q² (see the header).
  for (int t = 0; t < used; ++t) {
    const double* g = parts.data() + static_cast<std::size_t>(t) * (dd + d);
    for (int a = 0; a < d; ++a)
      for (int c = a; c < d; ++c) G[a * d + c] += sign * g[a * d + c];
    for (int a = 0; a < d; ++a) s[a] += sign * g[dd + a];
  }
}

// The padded single-precision copy of P's first `used` columns (zero beyond), dp columns.
std::vector<float> padded_P(const double* P, int d, int used, int dp) {
  std::vector<float> Pp(static_cast<std::size_t>(d) * dp, 0.0f);
  for (int k = 0; k < d; ++k)
    for (int j = 0; j < used; ++j)
      Pp[static_cast<std::size_t>(k) * dp + j] = static_cast<float>(P[k * d + j]);
  return Pp;
}

}  // namespace

void gram_update(const ConstMatrixRef& X, std::span<const std::uint32_t> rows, bool all_rows,
                 double sign, double* G, double* s, int threads) {
  const int d = static_cast<int>(X.cols());
  const std::int64_t count = all_rows ? X.rows() : static_cast<std::int64_t>(rows.size());
  const std::uint32_t* idx = all_rows ? nullptr : rows.data();
  gram_parts(d, count, sign, G, s, threads,
             [&](std::int64_t b, std::int64_t e, double* g, double* gs) {
               gram_block(X.data(), X.outerStride(), d, idx, b, e, g, gs);
             });
}

void gram_update(const ClippedRows& Z, std::span<const std::uint32_t> rows, bool all_rows,
                 double sign, double* G, double* s, int threads) {
  const int d = static_cast<int>(Z.cols());
  const std::int64_t count = all_rows ? Z.rows() : static_cast<std::int64_t>(rows.size());
  const std::uint32_t* idx = all_rows ? nullptr : rows.data();
  // Any grouping of the rows gives the same exact sums, so blocks of recomputed rows do too; each
  // row padded with zeros to a multiple of 8 columns for the tiles.
  const int dp = (d + 7) / 8 * 8;
  const auto tiles = have_avx2() ? gram_tiles_avx2 : gram_tiles_base;
  gram_parts(d, count, sign, G, s, threads,
             [&](std::int64_t b, std::int64_t e, double* g, double* gs) {
               std::vector<double> buf(static_cast<std::size_t>(kBlockRows * dp), 0.0);
               for (std::int64_t r = b; r < e; r += kBlockRows) {
                 const std::int64_t m = std::min(kBlockRows, e - r);
                 for (std::int64_t k = 0; k < m; ++k)
                   Z.rows_into(idx, r + k, r + k + 1, buf.data() + k * dp);
                 tiles(buf.data(), static_cast<int>(m), d, dp, g, gs);
               }
             });
}

// The projection the score kernels read: the first `cols` columns of P (all when cols <= 0)
// padded to a multiple of 16 floats. Zero columns beyond `cols` add exact zeros to τ
// (t += 0·0), so skipping them changes nothing.
static std::pair<int, std::vector<float>> score_projection(const double* P, int d, int cols) {
  const int used = cols > 0 && cols < d ? cols : d;
  const int dp = (used + 15) / 16 * 16;
  return {dp, padded_P(P, d, used, dp)};
}

void scores(const ConstMatrixRef& X, std::span<const std::uint32_t> rows, const double* P,
            const double* mu, double* tau, int threads, int cols) {
  const int d = static_cast<int>(X.cols());
  const auto [dp, Pp] = score_projection(P, d, cols);
  parallel_rows(static_cast<std::int64_t>(rows.size()), threads,
                [&](int, std::int64_t b, std::int64_t e) {
                  std::vector<float> c(static_cast<std::size_t>(4 * d));
                  score_block(X.data(), X.outerStride(), d, dp, rows.data(), b, e, Pp.data(), mu,
                              tau, c.data());
                });
}

void scores(const ClippedRows& Z, std::span<const std::uint32_t> rows, const double* P,
            const double* mu, double* tau, int threads, int cols) {
  const int d = static_cast<int>(Z.cols());
  const auto [dp, Pp] = score_projection(P, d, cols);
  // Blocks of recomputed rows through the same four-row code: a row's score depends on its
  // values alone (score_body), not on its block or slot.
  parallel_rows(static_cast<std::int64_t>(rows.size()), threads,
                [&](int, std::int64_t b, std::int64_t e) {
                  std::vector<float> c(static_cast<std::size_t>(4 * d));
                  std::vector<double> buf(static_cast<std::size_t>(kBlockRows * d));
                  for (std::int64_t r = b; r < e; r += kBlockRows) {
                    const std::int64_t m = std::min(kBlockRows, e - r);
                    Z.rows_into(rows.data(), r, r + m, buf.data());
                    score_block(buf.data(), d, d, dp, nullptr, 0, m, Pp.data(), mu, tau + r,
                                c.data());
                  }
                });
}

}  // namespace dpstats::mean_detail
