#include "dpstats/synthetic/synthetic_users.hpp"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <numbers>

#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/error.hpp"

namespace dpstats::optimize {
namespace {

// One honest feature vector: N(μ, I/d) clipped to norm 1, times the user's scale.
void draw_features(const UserTask& t, const Vector* mu, double scale, Rng& rng, double* out) {
  const double sd = 1 / std::sqrt(static_cast<double>(t.d));
  double norm2 = 0;
  for (std::int64_t j = 0; j < t.d; ++j) {
    out[j] = sd * standard_normal(rng) + (mu ? (*mu)[j] : 0.0);
    norm2 += out[j] * out[j];
  }
  const double f = scale / std::max(1.0, std::sqrt(norm2));
  for (std::int64_t j = 0; j < t.d; ++j) out[j] *= f;
}

double draw_scale(const UserTask& t, Rng& rng) {
  return 1 - t.scale_spread + 2 * t.scale_spread * rng.uniform01();
}

Vector draw_shift(const UserTask& t, Rng& rng) {
  Vector mu(t.d);
  const double sd = t.feature_shift / std::sqrt(static_cast<double>(t.d));
  for (auto& v : mu) v = sd * standard_normal(rng);
  return mu;
}

double softplus(double u) { return u > 0 ? u + std::log1p(std::exp(-u)) : std::log1p(std::exp(u)); }
double sigmoid(double u) {
  return u >= 0 ? 1 / (1 + std::exp(-u)) : std::exp(u) / (1 + std::exp(u));
}

void check_task(const UserTask& t) {
  require(t.n >= 1 && t.m >= 1 && t.d >= 1, "user task: n, m, d must be >= 1");
  require(t.scale_spread >= 0 && t.scale_spread < 1, "user task: scale_spread must be in [0, 1)");
  require(t.heterogeneity >= 0 && t.feature_shift >= 0, "user task: heterogeneity >= 0");
  require(t.label_noise >= 0 && t.label_noise <= 0.5, "user task: label_noise must be in [0, 1/2]");
}

}  // namespace

Vector make_w_star(const UserTask& t, Rng& rng) {
  Vector w(t.d);
  for (auto& v : w) v = standard_normal(rng);
  return w * (t.w_norm / w.norm());
}

UserDataset make_user_task(const UserTask& t, const Vector& w_star, Rng& rng) {
  check_task(t);
  const std::int64_t N = t.n * t.m;
  RowMatrix X(N, t.d);
  Vector y(N);
  const double sd = 1 / std::sqrt(static_cast<double>(t.d));
  for (std::int64_t u = 0; u < t.n; ++u) {
    const double scale = draw_scale(t, rng);
    Vector w = w_star;
    if (t.heterogeneity > 0)
      for (auto& v : w) v += t.heterogeneity * sd * standard_normal(rng);
    // Draws for the newer knobs come after the old ones, so that the homogeneous task's data is
    // unchanged for a given seed.
    const double flip = t.label_noise > 0 ? t.label_noise * rng.uniform01() : 0.0;
    const Vector mu = t.feature_shift > 0 ? draw_shift(t, rng) : Vector();
    const bool adversary = u < t.adversaries;
    for (std::int64_t k = 0; k < t.m; ++k) {
      const std::int64_t i = u * t.m + k;
      draw_features(t, t.feature_shift > 0 ? &mu : nullptr, scale, rng, X.row(i).data());
      const double z = X.row(i).dot(w);
      if (t.squared) {
        y[i] = z + (2 * rng.uniform01() - 1);
      } else {
        y[i] = rng.uniform01() < sigmoid(z) ? 1.0 : -1.0;
      }
      if (flip > 0 && rng.uniform01() < flip) y[i] = -y[i];
      if (adversary) {
        y[i] = -y[i];
        X.row(i) *= 100;
      }
    }
  }
  return UserDataset(std::move(X), std::move(y), t.m, 1 + t.scale_spread,
                     t.squared ? (1 + t.scale_spread) * t.w_norm + 1 : 1.0);
}

PopulationExcess::PopulationExcess(const UserTask& t, const Vector& w_star, std::int64_t items,
                                   Rng& rng, std::int64_t minimiser_items) {
  check_task(t);
  require(!t.squared, "PopulationExcess: only the logistic task (squared = false)");
  require(items >= 2 && minimiser_items >= 2, "PopulationExcess: items must be >= 2");
  require(w_star.size() == t.d && w_star.norm() > 0, "PopulationExcess: w* must be non-zero, size d");
  // Each draw is one item of a fresh user (the honest users' mixture).
  auto draw = [&](double* out) {
    const double scale = draw_scale(t, rng);
    if (t.feature_shift > 0) {
      const Vector mu = draw_shift(t, rng);
      draw_features(t, &mu, scale, rng, out);
    } else {
      draw_features(t, nullptr, scale, rng, out);
    }
  };
  x_star_ = w_star;
  if (t.heterogeneity > 0 || t.label_noise > 0) {
    // 20-point Gauss–Hermite (Golub–Welsch) for E_Z σ(v + sZ), Z ~ N(0, 1).
    constexpr int kNodes = 20;
    Eigen::MatrixXd J = Eigen::MatrixXd::Zero(kNodes, kNodes);
    for (int k = 1; k < kNodes; ++k) J(k - 1, k) = J(k, k - 1) = std::sqrt(k / 2.0);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(J);
    const Vector z = std::numbers::sqrt2 * es.eigenvalues();
    const Vector wz = es.eigenvectors().row(0).array().square().matrix().transpose();
    const Vector dir = w_star / w_star.norm();
    const double rho_bar = t.label_noise / 2;
    const double kappa = t.heterogeneity / std::sqrt(static_cast<double>(t.d));
    Vector tt(minimiser_items), p(minimiser_items), a(t.d);
    for (std::int64_t i = 0; i < minimiser_items; ++i) {
      draw(a.data());
      tt[i] = a.dot(dir);
      const double v = w_star.norm() * tt[i], s = kappa * a.norm();
      double pc = 0;
      for (int k = 0; k < kNodes; ++k) pc += wz[k] * sigmoid(v + s * z[k]);
      p[i] = rho_bar + (1 - 2 * rho_bar) * pc;
    }
    double c = w_star.norm();
    for (int it = 0; it < 50; ++it) {
      double g = 0, h = 0;
      for (std::int64_t i = 0; i < minimiser_items; ++i) {
        const double sg = sigmoid(c * tt[i]);
        g += (sg - p[i]) * tt[i];
        h += sg * (1 - sg) * tt[i] * tt[i];
      }
      const double step = g / h;
      c -= step;
      if (std::abs(step) < 1e-13 * std::abs(c)) break;
    }
    x_star_ = c * dir;
  }
  a_.resize(items, t.d);
  for (std::int64_t i = 0; i < items; ++i) draw(a_.row(i).data());
  u_star_ = a_ * x_star_;
}

double PopulationExcess::operator()(const Vector& x) const {
  require(x.size() == a_.cols(), "PopulationExcess: x must have size d");
  const Vector u = a_ * x;
  double sum = 0;
  for (Eigen::Index i = 0; i < u.size(); ++i) {
    const double v = u_star_[i];
    sum += softplus(u[i]) - softplus(v) - sigmoid(v) * (u[i] - v);
  }
  return sum / static_cast<double>(u.size());
}

double PopulationExcess::standard_error(const Vector& x) const {
  require(x.size() == a_.cols(), "PopulationExcess: x must have size d");
  const Vector u = a_ * x;
  const double n = static_cast<double>(u.size());
  double s1 = 0, s2 = 0;
  for (Eigen::Index i = 0; i < u.size(); ++i) {
    const double v = u_star_[i];
    const double b = softplus(u[i]) - softplus(v) - sigmoid(v) * (u[i] - v);
    s1 += b;
    s2 += b * b;
  }
  const double mean = s1 / n;
  return std::sqrt(std::max(0.0, s2 / n - mean * mean) / (n - 1));
}

}  // namespace dpstats::optimize
