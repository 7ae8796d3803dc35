// Closed-form expected errors (docs/proofs/moments.md), for tests, planning and the reproductions.
// Per-step vectors are 0-based in t. Dense helpers materialise n x n matrices: small n only.
#pragma once
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/moments/factorization.hpp"
#include "dpstats/moments/sensitivity.hpp"
#include "dpstats/moments/workload.hpp"

namespace dpstats::moments {

// ||row_t(A C^{-1})||^2 for t = 0..n-1 (Toeplitz convolution when C is Toeplitz; dense otherwise).
std::vector<double> b_row_norms_sq(const Workload& A, const Factorization& C);
// Q_tt = (C^{-1} C^{-T})_tt, the squared norms of the rows of C^{-1}.
std::vector<double> q_diag(const Factorization& C);
double sum(const std::vector<double>& v);

struct ExpectedErrors {
  std::vector<double> first;   // E||Ŷ_t - Y_t||^2
  std::vector<double> second;  // E||Ŝ_t - S_t||_F^2 (JME/IME/CS: exact for every X)
};
// JME, lambda-JME, IME and CS (docs/proofs/moments.md): d g1^2 ||row_t(B1)||^2 and D2 g2^2 ||row_t(B2)||^2.
ExpectedErrors expected_errors(const NoiseParameters& p, double sigma, const Workload& A1,
                               const Workload& A2, const Factorization& C1,
                               const Factorization& C2);

// PP for a given X (docs/proofs/moments.md), per step; g = first-moment noise std.
std::vector<double> pp_sq_error(const Workload& A2, const Factorization& C1,
                                const ConstMatrixRef& X, double g, bool debiased,
                                SecondMomentForm form);
// PP worst case over ||x|| <= zeta for C1 = I (Cor 3.9 / Lemma 4.4), summed over steps:
// sup T = zeta^2 ||A2||_F^2.
double pp_sup_sq_error_identity(const Workload& A2, std::size_t d, double g, double zeta,
                                bool debiased, SecondMomentForm form);
// Frobenius helpers: ||A||_F^2 and ||A 1||^2.
double frobenius_sq(const Workload& A);
double row_sums_sq(const Workload& A);

}  // namespace dpstats::moments
