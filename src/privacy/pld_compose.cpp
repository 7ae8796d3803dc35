// Composition, truncation, coarsening and the (epsilon, delta) read-outs of a PLD; see
// include/dpstats/privacy/pld.hpp and docs/proofs/accounting.md §2-§3.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <unsupported/Eigen/FFT>

#include "dpstats/error.hpp"
#include "dpstats/privacy/pld.hpp"

namespace dpstats {

namespace privacy_detail {
PldPmf discretise(PldMechanism m, double noise, double sensitivity, double p1, double p2, double h);
PldPmf atoms(const std::vector<std::pair<double, double>>& loss_mass, double infinity, double h);
double loss_deviation(const PldPmf& p);
}  // namespace privacy_detail

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;
// Relative margin on read-outs for the rounding of the sums and of the discretisation's CDFs.
constexpr double kReadMargin = 1e-9;

std::int64_t floor_div2(std::int64_t a) { return a >= 0 ? a / 2 : -((-a + 1) / 2); }

// Cuts at most `tail` mass from each end: the upper part to +infinity, the lower part onto the
// lowest kept point (rounded up). Both only increase delta(epsilon) (proofs §2).
void truncate(PldPmf& p, double tail) {
  auto& m = p.mass;
  std::size_t hi = m.size();
  double cut = 0;
  while (hi > 1 && cut + m[hi - 1] <= tail) cut += m[--hi];
  p.infinity_mass = std::min(1.0, p.infinity_mass + cut);
  m.resize(hi);
  std::size_t lo = 0;
  double low = 0;
  while (lo + 1 < m.size() && low + m[lo] <= tail) low += m[lo++];
  if (lo > 0) {
    m[lo] += low;
    m.erase(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(lo));
    p.offset += static_cast<std::int64_t>(lo);
  }
}

// The same PLD on the grid 2h: an atom at an odd multiple of h is split between its two
// neighbours keeping its mass and Q-mass (connect the dots, proofs §1).
void coarsen(PldPmf& p) {
  const double h = p.h;
  const double to_upper = 1 / (1 + std::exp(-h));  // m_b / m for an atom at a + h, cell 2h
  const std::int64_t lo = floor_div2(p.offset);
  const std::int64_t hi = floor_div2(p.offset + static_cast<std::int64_t>(p.mass.size()) - 1) + 1;
  std::vector<double> out(static_cast<std::size_t>(hi - lo + 1), 0.0);
  for (std::size_t i = 0; i < p.mass.size(); ++i) {
    const std::int64_t j = p.offset + static_cast<std::int64_t>(i);
    const auto a = static_cast<std::size_t>(floor_div2(j) - lo);
    if (j % 2 == 0) {
      out[a] += p.mass[i];
    } else {
      const double up = p.mass[i] * to_upper;
      out[a + 1] += up;
      out[a] += p.mass[i] - up;
    }
  }
  while (out.size() > 1 && out.back() == 0) out.pop_back();
  p.mass = std::move(out);
  p.offset = lo;
  p.h = 2 * h;
}

// Coarsens while the PLD is longer than max_buckets, and while a grid twice as coarse would still
// resolve its loss deviation with cells_per_deviation cells (the grid is sized for the regime:
// fine while the loss is concentrated, coarse once composition has spread it).
void coarsen_to_fit(PldPmf& p, const PldOptions& o) {
  while (p.mass.size() > o.max_buckets) coarsen(p);
  while (p.mass.size() > o.min_buckets && 2 * p.h * o.cells_per_deviation <= privacy_detail::loss_deviation(p))
    coarsen(p);
}

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// Circular-free FFT convolution of nonnegative a and b (zero padded) with l1 norms at most sa and
// sb; `error` gets an l1 bound on its rounding error (proofs §3: Higham 2002 §24.1, eta = 7 u
// log2 N, for l1 norms <= 1; the FFT commutes exactly with scaling by powers of two, which brings
// the norms into (1/2, 1]; underflow adds at most 1e-300). Numeric kernel.
std::vector<double> fft_convolve(const std::vector<double>& a, const std::vector<double>& b,
                                 double sa, double sb, double& error) {
  const std::size_t n = a.size() + b.size() - 1;
  std::size_t size = 1;
  while (size < n) size <<= 1;
  Eigen::FFT<double> fft;
  fft.SetFlag(Eigen::FFT<double>::HalfSpectrum);
  std::vector<double> pa(a);
  pa.resize(size, 0.0);
  std::vector<std::complex<double>> fa, fb;
  fft.fwd(fa, pa);
  if (a == b) {  // squaring: one forward transform
    for (auto& c : fa) c *= c;
  } else {
    std::vector<double> pb(b);
    pb.resize(size, 0.0);
    fft.fwd(fb, pb);
    for (std::size_t i = 0; i < fa.size(); ++i) fa[i] *= fb[i];
  }
  std::vector<double> res;
  fft.inv(res, fa);
  res.resize(n);
  const double log2n = std::log2(static_cast<double>(size));
  // Scaled by 2^ka, 2^kb (2^-ka >= sa, 2^-kb >= sb, the sums' own rounding covered): the bound
  // 21 u log2 N sqrt(N) (2^ka |a|_2 + 2^kb |b|_2), scaled back by 2^-(ka + kb).
  const double scale_a = std::exp2(std::ceil(std::log2(sa * (1 + 1e-8))));
  const double scale_b = std::exp2(std::ceil(std::log2(sb * (1 + 1e-8))));
  error = 21 * kUnit * log2n * std::sqrt(static_cast<double>(size)) *
              (norm2(a) * scale_b + norm2(b) * scale_a) * (1 + 1e-10) + 1e-300;
  return res;
}

// The at most k largest entries of v moved out into (index, value) pairs; v keeps the rest.
std::vector<std::pair<std::size_t, double>> take_largest(std::vector<double>& v, std::size_t k) {
  std::vector<std::pair<std::size_t, double>> out;
  if (v.size() <= k) {
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i] != 0) out.push_back({i, v[i]}), v[i] = 0;
    return out;
  }
  std::vector<double> sorted(v);
  std::nth_element(sorted.begin(), sorted.end() - static_cast<std::ptrdiff_t>(k), sorted.end());
  const double cut = sorted[sorted.size() - k];
  for (std::size_t i = 0; i < v.size() && out.size() < k; ++i)
    if (v[i] >= cut && v[i] > 0) out.push_back({i, v[i]}), v[i] = 0;
  return out;
}

// out[i + j] += x d[j] for every (i, x) of `sparse` (indices ascending) and every j, blocked
// over the output so that each block of it stays in the first-level cache while the sparse
// entries pass over it, four entries at a time. Numeric kernel.
__attribute__((target_clones("avx2", "default")))
void add_sparse_times_dense(std::vector<double>& out,
                            const std::vector<std::pair<std::size_t, double>>& sparse,
                            const std::vector<double>& d) {
  constexpr std::size_t kBlock = 512;
  if (sparse.empty() || d.empty()) return;
  const std::size_t n = d.size(), first = sparse.front().first, last = sparse.back().first + n;
  double* o = out.data();
  const double* dd = d.data();
  auto one = [&](std::size_t k0, std::size_t k1, std::size_t i, double x) {
    const std::size_t lo = std::max(k0, i), hi = std::min(k1, i + n);
    for (std::size_t k = lo; k < hi; ++k) o[k] += x * dd[k - i];
  };
  for (std::size_t k0 = first; k0 < last; k0 += kBlock) {
    const std::size_t k1 = std::min(k0 + kBlock, last);
    std::size_t s = 0;
    for (; s + 4 <= sparse.size(); s += 4) {
      const auto [i0, x0] = sparse[s];
      const auto [i1, x1] = sparse[s + 1];
      const auto [i2, x2] = sparse[s + 2];
      const auto [i3, x3] = sparse[s + 3];
      // k where all four apply: [max(k0, i3), min(k1, i0 + n)); the rest one at a time
      const std::size_t lo = std::max(k0, i3), hi = std::min(k1, i0 + n);
      if (lo >= hi) {
        for (int t = 0; t < 4; ++t) one(k0, k1, sparse[s + t].first, sparse[s + t].second);
        continue;
      }
      one(k0, lo, i0, x0), one(k0, lo, i1, x1), one(k0, lo, i2, x2);
      one(hi, k1, i1, x1), one(hi, k1, i2, x2), one(hi, k1, i3, x3);
      double* ob = o + lo;
      const double *d0 = dd + (lo - i0), *d1 = dd + (lo - i1), *d2 = dd + (lo - i2),
                   *d3 = dd + (lo - i3);
      for (std::size_t t = 0; t < hi - lo; ++t)
        ob[t] += x0 * d0[t] + x1 * d1[t] + x2 * d2[t] + x3 * d3[t];
    }
    for (; s < sparse.size(); ++s) one(k0, k1, sparse[s].first, sparse[s].second);
  }
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// Linear convolution of the finite parts with two error bounds: every output entry is at most
// (1 + relative) times the computed one plus a share of `absolute` (an l1 bound). The kBig
// largest masses of each side are convolved directly (nonnegative sums: a relative error, which
// composition does not amplify, proofs §3), the rest by FFT, whose normwise error scales with
// the l1 and l2 norms of what is left (kBig = 1024 keeps it near 1e-15 after 1e7 compositions of
// a subsampled Gaussian; 64 left 1e-11 and ruled out delta = 1e-12). Numeric kernel.
std::vector<double> convolve_masses(const std::vector<double>& a, const std::vector<double>& b,
                                    double& relative, double& absolute) {
  constexpr std::size_t kBig = 1024;
  const std::size_t n = a.size() + b.size() - 1;
  std::vector<double> out(n, 0.0);
  absolute = 0;
  if (std::min(a.size(), b.size()) <= kBig) {
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j = 0; j < b.size(); ++j) out[i + j] += a[i] * b[j];
    relative = 2 * kUnit * static_cast<double>(std::min(a.size(), b.size()) + 1);
    return out;
  }
  std::vector<double> as(a), bs(b);
  const auto ab = take_largest(as, kBig), bb = take_largest(bs, kBig);
  // a * b = a_big * b + a_small * b_big + a_small * b_small.
  add_sparse_times_dense(out, ab, b);
  add_sparse_times_dense(out, bb, as);
  const double sa = sum(as), sb = sum(bs);
  if (sa > 0 && sb > 0) {
    const std::vector<double> rest = fft_convolve(as, bs, sa, sb, absolute);
    for (std::size_t i = 0; i < n; ++i) out[i] = std::max(0.0, out[i] + rest[i]);
  }
  // Each output gets at most 2 kBig direct additions of nonnegative terms.
  relative = 2 * kUnit * static_cast<double>(2 * kBig + 2);
  return out;
}

}  // namespace

namespace privacy_detail {

// The loss's standard deviation under P (finite part; 0 for a point mass).
double loss_deviation(const PldPmf& p) {
  double m0 = 0, m1 = 0, m2 = 0;
  for (std::size_t i = 0; i < p.mass.size(); ++i) {
    const double k = static_cast<double>(i);
    m0 += p.mass[i];
    m1 += p.mass[i] * k;
    m2 += p.mass[i] * k * k;
  }
  if (!(m0 > 0)) return 0;
  const double mean = m1 / m0;
  return std::sqrt(std::max(0.0, m2 / m0 - mean * mean)) * p.h;
}

PldPmf identity_pmf(double h) {
  PldPmf p;
  p.h = h;
  p.offset = 0;
  p.mass = {1.0};
  return p;
}

void check_options(const PldOptions& o) {
  require(std::isfinite(o.discretization) && o.discretization >= 1e-7 && o.discretization <= 1,
          fmt::format("discretization must be in [1e-7, 1], got {}", o.discretization));
  require(o.max_buckets >= 256 && o.max_buckets <= (std::size_t{1} << 24),
          fmt::format("max_buckets must be in [256, 2^24], got {}", o.max_buckets));
  require(o.tail_mass >= 0 && o.tail_mass <= 1e-10,
          fmt::format("tail_mass must be in [0, 1e-10], got {}", o.tail_mass));
  require(o.min_buckets >= 16 && o.min_buckets <= o.max_buckets,
          fmt::format("min_buckets must be in [16, max_buckets = {}], got {}", o.max_buckets,
                      o.min_buckets));
  require(std::isfinite(o.cells_per_deviation) && o.cells_per_deviation >= 1 &&
              o.cells_per_deviation <= 1024,
          fmt::format("cells_per_deviation must be in [1, 1024], got {}", o.cells_per_deviation));
}

// Truncation (at most `tail` from each end) and coarsening of a freshly discretised PLD.
void PldTrim(PldPmf& p, const PldOptions& o, double tail) {
  truncate(p, tail);
  coarsen_to_fit(p, o);
}

PldPmf convolve(const PldPmf& a0, const PldPmf& b0, const PldOptions& o, double tail) {
  PldPmf a = a0, b = b0;
  // Grids are the base interval times powers of two; bring both to the coarser one.
  while (a.h < b.h * (1 - 1e-9)) coarsen(a);
  while (b.h < a.h * (1 - 1e-9)) coarsen(b);
  require(std::fabs(a.h - b.h) <= 1e-9 * a.h,
          fmt::format("PLD: cannot compose PLDs on grids {} and {} (not a power of 2 apart)", a0.h,
                      b0.h));
  PldPmf out;
  out.h = a.h;
  out.offset = a.offset + b.offset;
  double relative = 0, absolute = 0;
  out.mass = convolve_masses(a.mass, b.mass, relative, absolute);
  // The computed masses times (1 + relative) bound the exact ones (the product's own rounding is
  // covered by doubling it): a measure above the PLD, whose delta-curve is above (proofs §3).
  for (double& m : out.mass) m *= 1 + 2 * relative;
  // +infinity of the product measure: ia |b| + ib (|a| - ia), rounded up; plus the FFT's error.
  const double ia = a.infinity_mass, ib = b.infinity_mass;
  const double ma = sum(a.mass) + ia, mb = sum(b.mass) + ib;
  out.infinity_mass = std::min(1.0, (ia * mb + ib * (ma - ia) + absolute) * (1 + 1e-12));
  truncate(out, tail);
  coarsen_to_fit(out, o);
  return out;
}

}  // namespace privacy_detail

double PldPmf::delta_for_epsilon(double epsilon) const {
  require(!std::isnan(epsilon), "epsilon must be a number, got nan");
  // Sum from the top so that small tails are not lost against the bulk.
  double d = 0;
  for (std::size_t i = mass.size(); i-- > 0;) {
    const double l = static_cast<double>(offset + static_cast<std::int64_t>(i)) * h;
    if (l <= epsilon) break;
    d += mass[i] * -std::expm1(epsilon - l);
  }
  return std::min(1.0, (d + infinity_mass) * (1 + kReadMargin));
}

double PldPmf::epsilon_for_delta(double input_delta) const {
  check_delta_positive(input_delta, "delta");
  const double delta = input_delta / (1 + kReadMargin);
  if (infinity_mass >= delta) return kInf;
  // delta(epsilon) on (l_j, l_{j+1}] is infinity + S1 - e^epsilon S2 (S over i > j): walk down.
  double s1 = 0, s2 = 0;
  for (std::size_t i = mass.size(); i-- > 0;) {
    const double li = static_cast<double>(offset + static_cast<std::int64_t>(i)) * h;
    const double below = i == 0 ? -kInf : li - h;  // segment (below, li]
    s1 += mass[i];
    s2 += mass[i] * std::exp(-li);
    // delta at `below`: if still <= delta, continue down; else solve on (below, li].
    const double d_below = below == -kInf ? infinity_mass + s1
                                          : infinity_mass + s1 - std::exp(below) * s2;
    if (d_below > delta) {
      const double eps = std::log((infinity_mass + s1 - delta) / s2);
      return std::max(0.0, std::nextafter(std::min(eps, li), kInf));
    }
  }
  return 0;
}

}  // namespace dpstats
