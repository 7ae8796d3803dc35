#include "dpstats/synthetic/heavy_tailed_data.hpp"

#include <array>
#include <cmath>
#include <numbers>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/heavy_tailed/certificate.hpp"

namespace dpstats::optimize {
namespace {

double normal(Rng& rng) {
  for (;;) {
    const double u = 2 * rng.uniform01() - 1, v = 2 * rng.uniform01() - 1;
    const double s = u * u + v * v;
    if (s > 0 && s < 1) return u * std::sqrt(-2 * std::log(s) / s);
  }
}

double student_t(int nu, Rng& rng) {
  double chi = 0;
  for (int j = 0; j < nu; ++j) {
    const double z = normal(rng);
    chi += z * z;
  }
  return normal(rng) / std::sqrt(chi / nu);
}

// 20-point Gauss–Legendre nodes/weights on [−1, 1] (positive half).
constexpr std::array<double, 10> kNodes = {0.0765265211334973, 0.2277858511416451, 0.3737060887154195,
                                           0.5108670019508271, 0.6360536807265150, 0.7463319064601508,
                                           0.8391169718222188, 0.9122344282513259, 0.9639719272779138,
                                           0.9931285991850949};
constexpr std::array<double, 10> kWeights = {0.1527533871307258, 0.1491729864726037, 0.1420961093183820,
                                             0.1316886384491766, 0.1181945319615184, 0.1019301198172404,
                                             0.0832767415767048, 0.0626720483341091, 0.0406014298003869,
                                             0.0176140071391521};

template <class F>
double gauss_legendre(F&& f, double a, double b) {
  const double h = (b - a) / 2, c = (a + b) / 2;
  double s = 0;
  for (std::size_t j = 0; j < kNodes.size(); ++j) {
    s += kWeights[j] * (f(c - h * kNodes[j]) + f(c + h * kNodes[j]));
  }
  return s * h;
}

// ψ(c) = E|c − ξ| − E|ξ| = ∫_0^|c| (2F(s) − 1) ds for symmetric ξ ~ t(ν).
double psi(double c, int nu) {
  const double a = std::abs(c);
  const auto g = [nu](double s) { return 2 * student_t_cdf(s, nu) - 1; };
  if (a <= 4) return gauss_legendre(g, 0, a);
  double s = gauss_legendre(g, 0, 4);
  if (a <= 40) return s + gauss_legendre(g, 4, a);
  return s + gauss_legendre(g, 4, 40) + gauss_legendre(g, 40, a);
}

}  // namespace

std::string HeavyTailedTask::loss() const {
  return kind == HeavyTailedTaskKind::hinge_student_t ? "hinge" : "absolute";
}

double student_t_cdf(double x, int nu) {
  require(nu >= 1 && nu % 2 == 1, "student_t_cdf: nu must be odd");
  const double th = std::atan(x / std::sqrt(static_cast<double>(nu)));
  if (nu == 1) return 0.5 + th / std::numbers::pi;
  const double c = std::cos(th), s = std::sin(th);
  double term = 1, sum = 1;
  for (int j = 1; j <= (nu - 3) / 2; ++j) {
    term *= (2.0 * j) / (2.0 * j + 1) * c * c;
    sum += term;
  }
  return 0.5 + (th + s * c * sum) / std::numbers::pi;
}

Vector heavy_tailed_w_star(const HeavyTailedTask& t) {
  return Vector::Constant(t.d, t.w_norm / std::sqrt(static_cast<double>(t.d)));
}

HeavyTailedSample generate_heavy_tailed(const HeavyTailedTask& t, std::int64_t n, Rng& rng) {
  require(n >= 1 && t.d >= 1, "generate_heavy_tailed: n and d must be >= 1");
  HeavyTailedSample s{RowMatrix(n, t.d), Vector(n)};
  const Vector ws = heavy_tailed_w_star(t);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < t.d; ++j) s.X(i, j) = student_t(t.nu, rng);
    const double u = s.X.row(i).dot(ws);
    switch (t.kind) {
      case HeavyTailedTaskKind::l1_student_t: s.y[i] = u + student_t(t.nu, rng); break;
      case HeavyTailedTaskKind::l1_misspecified:
        s.y[i] = u + 0.2 * s.X(i, 0) * std::abs(s.X(i, 0)) + student_t(t.nu, rng);
        break;
      case HeavyTailedTaskKind::hinge_student_t: {
        const double lab = u >= 0 ? 1.0 : -1.0;
        s.y[i] = rng.uniform01() < 0.1 ? -lab : lab;
        break;
      }
    }
  }
  return s;
}

HeavyTailedRisk::HeavyTailedRisk(const HeavyTailedTask& t, std::int64_t eval_size, std::uint64_t seed)
    : task_(t) {
  SeededRng rng(seed);
  eval_ = generate_heavy_tailed(t, eval_size, rng);
  if (t.kind == HeavyTailedTaskKind::l1_student_t) {
    w_ref_ = heavy_tailed_w_star(t);
    return;
  }
  GlmErmProblem p;
  p.A = &eval_.X;
  p.y = &eval_.y;
  p.end = eval_size;
  p.env.kind = parse_enum<GlmKind>(t.loss());
  p.C = std::numeric_limits<double>::infinity();
  p.lambda = 1e-10;
  p.w0 = Vector::Zero(t.d);
  p.center = Vector::Zero(t.d);
  p.radius = t.radius;
  w_ref_ = solve_glm_erm_reference(p, 1e-8);
  f_ref_ = risk(w_ref_);
}

double HeavyTailedRisk::risk(const Vector& w) const {
  long double s = 0;
  GlmEnvelope env;
  env.kind = parse_enum<GlmKind>(task_.loss());
  for (Eigen::Index i = 0; i < eval_.X.rows(); ++i) s += env.phi(eval_.X.row(i).dot(w), eval_.y[i]);
  return static_cast<double>(s / eval_.X.rows());
}

double HeavyTailedRisk::excess(const Vector& w) const {
  if (task_.kind != HeavyTailedTaskKind::l1_student_t) return risk(w) - f_ref_;
  const Vector delta = w - w_ref_;
  long double s = 0;
  for (Eigen::Index i = 0; i < eval_.X.rows(); ++i) s += psi(eval_.X.row(i).dot(delta), task_.nu);
  return static_cast<double>(s / eval_.X.rows());
}

// E‖x‖^k = E S^{k/2} for S = Σ_j x_j², x_j ~ t(ν) i.i.d., k even and < ν: E x^{2p} =
// ν^p Π_{i<=p} (2i − 1)/(ν − 2i), and the moments of a sum by the binomial convolution.
double even_moment(std::int64_t d, int nu, int half_k) {
  std::vector<double> one(static_cast<std::size_t>(half_k) + 1), sum(one.size(), 0.0);
  one[0] = 1;
  for (int p = 1; p <= half_k; ++p) one[p] = one[p - 1] * nu * (2.0 * p - 1) / (nu - 2.0 * p);
  sum[0] = 1;
  for (std::int64_t j = 1; j <= d; ++j) {
    std::vector<double> next(one.size(), 0.0);
    for (int p = 0; p <= half_k; ++p) {
      double binom = 1;
      for (int q = 0; q <= p; ++q) {
        next[p] += binom * sum[q] * one[p - q];
        binom = binom * (p - q) / (q + 1);
      }
    }
    sum = next;
  }
  return sum[half_k];
}

MomentBound heavy_tailed_moment(const HeavyTailedTask& t, double k) {
  require(k < t.nu, "heavy_tailed_moment: k must be below the degrees of freedom nu");
  if (k == std::floor(k) && static_cast<int>(k) % 2 == 0) {
    MomentBound mb;
    mb.k = k;
    mb.G_k = std::pow(even_moment(t.d, t.nu, static_cast<int>(k) / 2), 1 / k);
    mb.G_2 = std::sqrt(even_moment(t.d, t.nu, 1));
    return mb;
  }
  SeededRng rng(0x6d6f6d656e74ULL);
  const std::int64_t N = 1000000;
  long double sk = 0, s2 = 0;
  for (std::int64_t i = 0; i < N; ++i) {
    double r2 = 0;
    for (std::int64_t j = 0; j < t.d; ++j) {
      const double x = student_t(t.nu, rng);
      r2 += x * x;
    }
    sk += std::pow(r2, k / 2);
    s2 += r2;
  }
  MomentBound mb;
  mb.k = k;
  mb.G_k = std::pow(static_cast<double>(sk / N), 1 / k);
  mb.G_2 = std::sqrt(static_cast<double>(s2 / N));
  return mb;
}

}  // namespace dpstats::optimize
