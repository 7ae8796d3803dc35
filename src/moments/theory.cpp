#include "dpstats/moments/theory.hpp"

#include <Eigen/Dense>
#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats::moments {
namespace {

using Index = Eigen::Index;

bool toeplitz_like(const Factorization& C) {
  return C.kind() != FactorizationKind::output;
}

// C^{-1} dense (small n).
RowMatrix dense_inverse(const Factorization& C) {
  const RowMatrix M = C.materialize();
  const auto n = M.rows();
  return M.triangularView<Eigen::Lower>().solve(RowMatrix::Identity(n, n));
}

}  // namespace

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

std::vector<double> b_row_norms_sq(const Workload& A, const Factorization& C) {
  const std::size_t n = A.steps();
  require(C.steps() == n, "workload and factorization horizons differ");
  std::vector<double> out(n);
  if (toeplitz_like(C)) {
    // A C^{-1} = D T(a) T(c)^{-1} = D T(a * c'), rows: D_t^2 sum_{k<=t} b_k^2.
    const auto a = A.coefficients(n);
    const auto ci = C.inverse_column(n);
    double acc = 0;
    for (std::size_t k = 0; k < n; ++k) {
      double b = 0;
      for (std::size_t j = 0; j <= k; ++j) b += a[j] * ci[k - j];
      acc += b * b;
      out[k] = A.row_scale(k) * A.row_scale(k) * acc;
    }
    return out;
  }
  if (*C.workload() == A) return std::vector<double>(n, 1.0);
  const RowMatrix B = A.materialize() * dense_inverse(C);
  for (std::size_t t = 0; t < n; ++t) out[t] = B.row(static_cast<Index>(t)).squaredNorm();
  return out;
}

std::vector<double> q_diag(const Factorization& C) {
  const std::size_t n = C.steps();
  std::vector<double> q(n);
  if (toeplitz_like(C)) {
    const auto ci = C.inverse_column(n);
    double acc = 0;
    for (std::size_t t = 0; t < n; ++t) q[t] = acc += ci[t] * ci[t];
    return q;
  }
  const RowMatrix Ci = dense_inverse(C);
  for (std::size_t t = 0; t < n; ++t) q[t] = Ci.row(static_cast<Index>(t)).squaredNorm();
  return q;
}

ExpectedErrors expected_errors(const NoiseParameters& p, double sigma, const Workload& A1,
                               const Workload& A2, const Factorization& C1,
                               const Factorization& C2) {
  require(p.method != Method::pp && p.method != Method::pp_debiased,
          "expected_errors covers JME, IME and CS; PP depends on X (use pp_sq_error)");
  NoiseParameters q = p;
  q.c1_norm = C1.norm_1_to_2();
  const Factorization& C2used = p.method == Method::cs ? C1 : C2;
  q.c2_norm = C2used.norm_1_to_2();
  const NoiseScales s = noise_scales(q, sigma);
  const double d = static_cast<double>(p.d);
  const double D2 = p.form == SecondMomentForm::full ? d * d : d;
  ExpectedErrors e;
  e.first = b_row_norms_sq(A1, C1);
  e.second = b_row_norms_sq(A2, C2used);
  for (auto& v : e.first) v *= d * s.g1 * s.g1;
  for (auto& v : e.second) v *= D2 * s.g2 * s.g2;
  return e;
}

std::vector<double> pp_sq_error(const Workload& A2, const Factorization& C1,
                                const ConstMatrixRef& X, double g, bool debiased,
                                SecondMomentForm form) {
  const auto n = static_cast<Index>(A2.steps());
  require(X.rows() == n, "X must have one row per step");
  const double d = static_cast<double>(X.cols());
  const RowMatrix A = A2.materialize();
  const RowMatrix Ci = dense_inverse(C1);
  const RowMatrix Q = Ci * Ci.transpose();
  const RowMatrix G = X * X.transpose();
  const RowMatrix QG = Q.cwiseProduct(G);
  const RowMatrix QQ = Q.cwiseProduct(Q);
  const RowMatrix AQG = A * QG, AQQ = A * QQ;  // row t: a_t^T (Q∘G), a_t^T (Q∘Q)
  const Vector qd = Q.diagonal();
  const double lin = form == SecondMomentForm::full ? 2 * (d + 1) : 4.0;
  const double quart = form == SecondMomentForm::full ? d * (d + 1) : 2 * d;
  const double g2 = g * g, g4 = g2 * g2;
  std::vector<double> out(static_cast<std::size_t>(n));
  for (Index t = 0; t < n; ++t) {
    const auto a = A.row(t);
    double e = lin * g2 * AQG.row(t).dot(a) + quart * g4 * AQQ.row(t).dot(a);
    if (!debiased) {
      const double b = a.dot(qd);
      e += d * g4 * b * b;
    }
    out[static_cast<std::size_t>(t)] = e;
  }
  return out;
}

double frobenius_sq(const Workload& A) {
  double s = 0;
  for (std::size_t t = 0; t < A.steps(); ++t) {
    double r = 0;
    for (std::size_t k = 0; k <= t; ++k) r += A.coefficient(k) * A.coefficient(k);
    s += A.row_scale(t) * A.row_scale(t) * r;
  }
  return s;
}

double row_sums_sq(const Workload& A) {
  double s = 0, r = 0;
  for (std::size_t t = 0; t < A.steps(); ++t) {
    r += A.coefficient(t);
    const double v = A.row_scale(t) * r;
    s += v * v;
  }
  return s;
}

double pp_sup_sq_error_identity(const Workload& A2, std::size_t dim, double g, double zeta,
                                bool debiased, SecondMomentForm form) {
  const double d = static_cast<double>(dim);
  const double F = frobenius_sq(A2), R = row_sums_sq(A2);
  const double g2 = g * g, g4 = g2 * g2, z2 = zeta * zeta;
  double e = form == SecondMomentForm::full ? (d * (d + 1) * g4 + 2 * (d + 1) * g2 * z2) * F
                                            : (2 * d * g4 + 4 * g2 * z2) * F;
  if (!debiased) e += d * g4 * R;
  return e;
}

}  // namespace dpstats::moments
