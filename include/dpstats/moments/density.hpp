// Private Gaussian density estimation over a stream (docs/proofs/moments.md): the first and full
// second moment with the average workload V, then Sigma_hat_t = S_hat_t - mu_hat mu_hat^T, plus
// the debias g1^2 ||row_t(A1 C1^{-1})||^2 I that undoes E[u u^T] in mu_hat mu_hat^T (JME and
// debiased PP; plain PP is the paper's biased baseline). All post-processing of the release.
#pragma once
#include "dpstats/moments/estimator.hpp"

namespace dpstats::moments {

// Symmetrise and project onto {Sigma : Sigma >= floor·I} (eigenvalue floor; docs/proofs/moments.md flag: the
// paper does not specify its projection).
RowMatrix project_pd(const ConstMatrixRef& S, double floor);

// KL(N(mu_hat, Sigma_hat) || N(mu, Sigma)); both covariances positive definite.
double gaussian_kl(const Vector& mu_hat, const ConstMatrixRef& Sigma_hat, const Vector& mu,
                   const ConstMatrixRef& Sigma);

class GaussianDensityEstimator {
 public:
  // config.A1/A2 are replaced by V; form must be full. method jme, pp or pp-debiased.
  GaussianDensityEstimator(MomentsConfig config, Rng& rng, Budget* budget = nullptr);
  void push(std::span<const double> x);
  Vector mean() const;
  // debias: add g1^2 ||row_t(B1)||^2 I (JME, PP-debiased); floor > 0: project onto the PD cone.
  RowMatrix covariance(bool debias, double floor) const;
  const MomentEstimator& estimator() const { return est_; }

 private:
  MomentEstimator est_;
  std::vector<double> b1_;  // ||row_t(A1 C1^{-1})||^2
};

}  // namespace dpstats::moments
