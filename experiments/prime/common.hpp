// Shared pieces of the PRIME reproductions (docs/proofs/mean.md §5-§6): the
// adversaries, the compared methods and a mean ± s.e. helper.
#pragma once
#include <fmt/format.h>

#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "../repro.hpp"
#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/prime_ht.hpp"
#include "dpstats/mean/private_filter.hpp"

namespace dpstats::prime_repro {

// Adversaries (docs/proofs/mean.md). All put ⌊αn⌋ bad rows among n − ⌊αn⌋ clean N(0, I) rows (true mean 0).
enum class Attack {
  shift,         // A1 (paper): N(1.5·1, I)
  same_norm,     // A2: t·v plus an orthogonal part, ‖x‖ distributed as a clean row, t = 4√ln(1/α)
  point_mass,    // A3: all bad rows at t·v, t = 2√ln(1/α)
  far,           // A4: ‖x‖ = 10^6 along v
  multi_dir,     // A5: spread over min(d, 8) orthogonal directions at t = 4√ln(1/α), same norm
  cov_matched,   // A6: v-component of the bad rows set to 1: Cov ≈ I, mean moved by α along v
  subtractive,   // A7: the αn clean rows with the largest vᵀx moved to vᵀx = 0 (the median)
  duplicates,    // A9: 30% of the clean rows in identical pairs, plus A1
  heavy,         // A10: clean rows Student-t (ν = 3) scaled to covariance I, plus A1
};
inline const char* name(Attack a) {
  switch (a) {
    case Attack::shift: return "A1 shift (paper)";
    case Attack::same_norm: return "A2 same-norm";
    case Attack::point_mass: return "A3 point mass";
    case Attack::far: return "A4 far outliers";
    case Attack::multi_dir: return "A5 multi-direction";
    case Attack::cov_matched: return "A6 covariance-matched";
    case Attack::subtractive: return "A7 subtractive";
    case Attack::duplicates: return "A9 duplicates + A1";
    case Attack::heavy: return "A10 Student-t(3) + A1";
  }
  return "?";
}

inline RowMatrix clean(std::int64_t n, std::int64_t d, Rng& g) {
  RowMatrix X(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j) X(i, j) = standard_normal(g);
  return X;
}

inline Vector unit(std::int64_t d, Rng& g) {
  Vector v(d);
  for (std::int64_t j = 0; j < d; ++j) v[j] = standard_normal(g);
  return v.normalized();
}

// A row at t·v with the norm of a clean row where possible (addendum 10: impossible if ‖z‖ < t).
inline Vector norm_matched(const Vector& z, const Vector& v, double t) {
  Vector w = z - z.dot(v) * v;
  const double norm2 = z.squaredNorm();
  if (norm2 <= t * t || w.norm() == 0) return t * v;
  return t * v + w.normalized() * std::sqrt(norm2 - t * t);
}

inline RowMatrix attack_data(Attack a, std::int64_t n, std::int64_t d, double alpha, Rng& g) {
  const auto bad = static_cast<std::int64_t>(std::floor(alpha * n));
  if (a == Attack::shift) return shifted_cluster(n, d, alpha, 1.5, g);
  if (a == Attack::duplicates) {
    // 30% of the clean rows in identical pairs (each pair one clean draw counted twice: ties and
    // duplicates without moving the clean mean or covariance in expectation), plus the A1 cluster.
    RowMatrix X = shifted_cluster(n, d, alpha, 1.5, g);
    std::int64_t done = 0, prev = -1;
    for (std::int64_t i = 0; i < n && done < (3 * n) / 10; ++i) {
      if (X.row(i).sum() > 0.75 * d) continue;  // leave the shifted rows alone (mostly)
      if (prev < 0) {
        prev = i;
      } else {
        X.row(i) = X.row(prev);
        prev = -1;
      }
      ++done;
    }
    return X;
  }
  if (a == Attack::heavy) {
    RowMatrix X(n, d);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < d; ++j) {
        double chi = 0;
        for (int k = 0; k < 3; ++k) {
          const double z = standard_normal(g);
          chi += z * z;
        }
        X(i, j) = standard_normal(g) / std::sqrt(chi / 3) / std::sqrt(3.0);  // variance 1
      }
    X.topRows(bad).array() += 1.5;
    return X;
  }
  RowMatrix X = clean(n, d, g);
  const Vector v = unit(d, g);
  const double la = std::sqrt(std::log(1 / alpha));
  switch (a) {
    case Attack::same_norm:
      for (std::int64_t i = 0; i < bad; ++i)
        X.row(i) = norm_matched(X.row(i).transpose(), v, 4 * la).transpose();
      break;
    case Attack::point_mass:
      for (std::int64_t i = 0; i < bad; ++i) X.row(i) = (2 * la * v).transpose();
      break;
    case Attack::far:
      for (std::int64_t i = 0; i < bad; ++i) X.row(i) = (1e6 * v).transpose();
      break;
    case Attack::multi_dir: {
      const std::int64_t k = std::min<std::int64_t>(d, 8);
      Matrix Q(d, k);
      for (std::int64_t a = 0; a < d; ++a)
        for (std::int64_t b = 0; b < k; ++b) Q(a, b) = standard_normal(g);
      Eigen::HouseholderQR<Matrix> qr(Q);
      const Matrix B = qr.householderQ() * Matrix::Identity(d, k);
      for (std::int64_t i = 0; i < bad; ++i)
        X.row(i) = norm_matched(X.row(i).transpose(), B.col(i % k), 4 * la).transpose();
      break;
    }
    case Attack::cov_matched:
      // v-component of every bad row set to exactly 1 (others clean): second moment along v
      // stays 1, so Cov(S) ≈ I − α²vvᵀ and no spectral filter can see it; the mean moves by α.
      for (std::int64_t i = 0; i < bad; ++i) {
        Vector z = X.row(i).transpose();
        X.row(i) = (z - z.dot(v) * v + v).transpose();
      }
      break;
    case Attack::subtractive: {
      std::vector<std::int64_t> idx(n);
      std::iota(idx.begin(), idx.end(), 0);
      Vector p = X * v;
      std::nth_element(idx.begin(), idx.begin() + bad, idx.end(),
                       [&](auto i, auto j) { return p[i] > p[j]; });
      for (std::int64_t r = 0; r < bad; ++r) {
        const auto i = idx[r];
        Vector z = X.row(i).transpose();
        X.row(i) = (z - z.dot(v) * v).transpose();  // v-component moved to the median, 0
      }
      break;
    }
    default: break;
  }
  return X;
}

struct MeanSe {
  double mean = 0, se = 0;
};
inline MeanSe mean_se(const std::vector<double>& v) {
  MeanSe r;
  if (v.empty()) return r;
  r.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - r.mean) * (x - r.mean);
    r.se = std::sqrt(ss / (v.size() - 1) / v.size());
  }
  return r;
}

// The compared methods; each returns ‖μ̂ − 0‖₂ (NaN when it abstained).
struct Methods {
  double epsilon, delta, alpha;
  int threads = 1;
  double prime(const RowMatrix& X, Rng& g, Profile p, double topk = 2, bool fallback = false,
               bool noiseless = false, std::string* note = nullptr) const {
    PrimeOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = epsilon;
    o.privacy.delta = delta;
    o.alpha = alpha;
    o.profile = p;
    o.topk_multiplier = topk;
    o.fallback = fallback;
    o.run.threads = threads;
    PrimeTrace t;
    t.noiseless = noiseless;
    const auto r = dpstats::prime(X, o, g, nullptr, noiseless ? &t : nullptr);
    if (note) *note = r.diagnostics.value("fallback", "");
    if (r.status != Status::ok) return std::nan("");
    return r.estimate.norm();
  }
  double dp_mean(const RowMatrix& X, Rng& g) const {
    DpMeanOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = epsilon;
    o.privacy.delta = delta;
    o.run.threads = threads;
    const auto r = dpstats::dp_mean(X, o, g);
    if (r.status != Status::ok) return std::nan("");
    return r.estimate.norm();
  }
  double prime_ht(const RowMatrix& X, Rng& g, Profile p = Profile::practical) const {
    PrimeOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = epsilon;
    o.privacy.delta = delta;
    o.alpha = alpha;
    o.profile = p;
    o.fallback = false;
    o.run.threads = threads;
    const auto r = dpstats::prime_ht(X, o, g);
    if (r.status != Status::ok) return std::nan("");
    return r.estimate.norm();
  }
  double private_filter(const RowMatrix& X, Rng& g,
                        Profile p = Profile::practical) const {
    PrivateFilterOptions o;
    o.scale = std::vector<double>{1.0};
    o.clip_check_share = 0;
    o.privacy.epsilon = epsilon;
    o.privacy.delta = delta;
    o.alpha = alpha;
    o.profile = p;
    o.run.threads = threads;
    const auto r = dpstats::private_filter(X, o, g);
    if (r.status != Status::ok) return std::nan("");
    return r.estimate.norm();
  }
  double filter(const RowMatrix& X, Rng& g) const {
    return robust_filter_nonprivate(X, alpha, 2.0, g).norm();
  }
  static double empirical(const RowMatrix& X) { return X.colwise().mean().norm(); }
};

// Mean ± s.e. over the finite entries; the count of abstentions goes to `abstained`.
inline MeanSe finite_mean_se(const std::vector<double>& v, int* abstained = nullptr) {
  std::vector<double> f;
  for (double x : v)
    if (std::isfinite(x)) f.push_back(x);
  if (abstained) *abstained = static_cast<int>(v.size() - f.size());
  if (f.empty()) return {std::nan(""), std::nan("")};
  return mean_se(f);
}

}  // namespace dpstats::prime_repro
