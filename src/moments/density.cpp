#include "dpstats/moments/density.hpp"

#include <Eigen/Dense>
#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/moments/theory.hpp"

namespace dpstats::moments {

RowMatrix project_pd(const ConstMatrixRef& S, double floor) {
  require(S.rows() == S.cols(), "project_pd needs a square matrix");
  check_positive(floor, "floor");
  const Eigen::MatrixXd sym = (S + S.transpose()) / 2;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(sym);
  const Vector ev = es.eigenvalues().cwiseMax(floor);
  return es.eigenvectors() * ev.asDiagonal() * es.eigenvectors().transpose();
}

double gaussian_kl(const Vector& mu_hat, const ConstMatrixRef& Sigma_hat, const Vector& mu,
                   const ConstMatrixRef& Sigma) {
  const auto d = static_cast<double>(mu.size());
  Eigen::LLT<Eigen::MatrixXd> l(Sigma), lh(Sigma_hat);
  require(l.info() == Eigen::Success && lh.info() == Eigen::Success,
          "gaussian_kl needs positive-definite covariances");
  const Eigen::MatrixXd inv_sh = l.solve(Eigen::MatrixXd(Sigma_hat));
  const Vector diff = mu - mu_hat;
  const double maha = diff.dot(l.solve(diff));
  const double logdet = 2 * Eigen::MatrixXd(l.matrixL()).diagonal().array().log().sum();
  const double logdet_h = 2 * Eigen::MatrixXd(lh.matrixL()).diagonal().array().log().sum();
  return 0.5 * (inv_sh.trace() + maha - d + logdet - logdet_h);
}

namespace {
MomentsConfig with_average(MomentsConfig c) {
  require(c.form == SecondMomentForm::full, "density estimation needs the full second moment");
  require(c.method == Method::jme || c.method == Method::pp || c.method == Method::pp_debiased,
          "density estimation supports jme, pp and pp-debiased");
  const bool sqrt = c.C1.kind() != FactorizationKind::input;
  require(!sqrt || c.C1.kind() == FactorizationKind::square_root,
          "density estimation supports input or sqrt factorizations");
  c.A1 = c.A2 = Workload::average(c.steps);
  c.C1 = c.C2 = sqrt ? Factorization::square_root(c.A1) : Factorization::input(c.steps);
  return c;
}
}  // namespace

GaussianDensityEstimator::GaussianDensityEstimator(MomentsConfig config, Rng& rng, Budget* budget)
    : est_(with_average(std::move(config)), rng, budget) {
  b1_ = moments::b_row_norms_sq(est_.config().A1, est_.config().C1);
}

void GaussianDensityEstimator::push(std::span<const double> x) { est_.push(x); }

Vector GaussianDensityEstimator::mean() const {
  return Eigen::Map<const Vector>(est_.first().data(), static_cast<Eigen::Index>(est_.first().size()));
}

RowMatrix GaussianDensityEstimator::covariance(bool debias, double floor) const {
  require(est_.step() >= 1, "covariance needs at least one step");
  const auto d = static_cast<Eigen::Index>(est_.config().dim);
  const Vector mu = mean();
  RowMatrix S = Eigen::Map<const RowMatrix>(est_.second().data(), d, d) - mu * mu.transpose();
  if (debias) {
    const double g = est_.scales().g1;
    S.diagonal().array() += g * g * b1_[est_.step() - 1];
  }
  if (floor > 0) return project_pd(S, floor);
  return (S + S.transpose()) / 2;
}

}  // namespace dpstats::moments
