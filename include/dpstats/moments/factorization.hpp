// Factorizations A = B·C of a workload (docs/proofs/moments.md). C is lower-triangular and
// invertible, so the matrix-factorization mechanism B(CX + Z) = A(X + C^{-1}Z) is causal.
//  * input  : C = I, B = A (independent noise on each input).
//  * output : C = A, B = I (noise on each output).
//  * sqrt   : C = T^{1/2}, the square root of the Toeplitz part T of A (closed forms for E1, E_beta,
//             W_k and Adam; the generic power-series recurrence otherwise), B = A C^{-1}.
//  * banded : the first b coefficients of the square root (BSR-style): C is banded Toeplitz, so
//             C·x and C^{-1}·w cost O(b) per step and coordinate in O(b) memory, for any horizon.
//             For E1 this truncation is far from the dense root (the error ratio falls only like
//             ~ sqrt(n/b)); use blt for prefix sums.
//  * blt:m  : a buffered-linear-Toeplitz C (McMahan et al. 2024): c_0 = kappa, c_k = kappa sum_i
//             omega_i theta_i^{k-1}, with m buffers, fitted to minimise the JME error factor
//             ||C||_{1->2}^2 ||A C^{-1}||_F^2 at the horizon (Nelder-Mead on its closed form, in
//             O(m^3 log n) per evaluation, from a least-squares fit of the square root). C·x and
//             C^{-1}·w both run through m buffers: O(m) per step and coordinate, O(m) memory,
//             for any horizon; its norms are computed from its n coefficients at construction.
//  * auto   : the default, chosen and sized from the horizon (docs/results/jme.md "Scale"):
//             blt:m with m = ceil(log10 n) clamped to [1, 8] (within a few percent of the dense
//             square root's error, below it from n = 10 to 10^7 for prefix sums), banded:4k for a
//             window of k (the workload itself keeps k rows). name() says which.
// Every C here has non-increasing column norms (Toeplitz: each column is a truncation of the first;
// output: A's row scale is non-increasing), so ||C||_{1->2} is the norm of the first column.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/moments/workload.hpp"

namespace dpstats::moments {

enum class FactorizationKind { input, output, square_root, banded, toeplitz, blt };
}  // namespace dpstats::moments

// The head word of a factorization spec ("banded" of "banded:8"); toeplitz is library-only.
template <>
struct dpstats::EnumNames<dpstats::moments::FactorizationKind> {
  using F = dpstats::moments::FactorizationKind;
  static constexpr std::string_view parameter = "factorization";
  static constexpr std::array<std::pair<F, std::string_view>, 6> names = {
      {{F::input, "input"}, {F::output, "output"}, {F::square_root, "sqrt"},
       {F::banded, "banded"}, {F::blt, "blt"}, {F::toeplitz, "toeplitz"}}};
};

namespace dpstats::moments {

// Power-series square root of sum a_k x^k (a_0 > 0): s_0 = sqrt(a_0),
// s_m = (a_m - sum_{j=1}^{m-1} s_j s_{m-j}) / (2 s_0). Returns m coefficients.
std::vector<double> toeplitz_square_root(const std::vector<double>& a, std::size_t m);
// Coefficients of the inverse of the lower-triangular Toeplitz matrix with first column c (c_0 != 0):
// y_0 = 1/c_0, y_i = -(sum_{j=1}^{i} c_j y_{i-j}) / c_0. Returns m coefficients.
std::vector<double> toeplitz_inverse(const std::vector<double>& c, std::size_t m);
// Closed-form square-root coefficients of E1: c_k = c_{k-1}(2k-1)/(2k) (running product).
std::vector<double> prefix_sqrt_coefficients(std::size_t m);

class Factorization {
 public:
  static Factorization input(std::size_t n);
  static Factorization output(const Workload& A);
  static Factorization square_root(const Workload& A);
  static Factorization banded(const Workload& A, std::size_t bands);
  // Any lower-triangular Toeplitz C with first column c (c_0 > 0), truncated to n steps.
  static Factorization toeplitz(std::vector<double> c, std::size_t n);
  // A BLT C with the given scale, decays theta_i in (0, 1) and weights omega_i.
  static Factorization blt(double kappa, std::vector<double> theta, std::vector<double> omega,
                           std::size_t n);
  // The m-buffer BLT fitted to A (see above).
  static Factorization fit_blt(const Workload& A, std::size_t buffers);
  // The default for A (see above), and its sizes.
  static Factorization automatic(const Workload& A);
  static std::size_t automatic_buffers(std::size_t n);
  static std::size_t automatic_bands(std::size_t n, std::size_t window);
  // "auto", "input", "output", "sqrt", "banded:B", "blt:M".
  static Factorization parse(const std::string& spec, const Workload& A);

  FactorizationKind kind() const { return kind_; }
  std::size_t steps() const { return n_; }
  std::string name() const;
  // Toeplitz first column c_0..c_{m-1} (m = the number of bands; {1} for input). Empty for output
  // and blt (whose column is generated: column()).
  const std::vector<double>& coefficients() const { return c_; }
  // The first min(m, steps) coefficients of C's first column, and of C^{-1}'s (not output).
  std::vector<double> column(std::size_t m) const;
  std::vector<double> inverse_column(std::size_t m) const;
  // The workload C equals (output only).
  const std::optional<Workload>& workload() const { return A_; }
  // BLT parameters (blt only).
  double kappa() const { return kappa_; }
  const std::vector<double>& theta() const { return theta_; }
  const std::vector<double>& omega() const { return omega_; }
  // ||C||_{1->2}: the largest column l2 norm.
  double norm_1_to_2() const { return norm_; }
  // sum_k |c_k| over the first column (Toeplitz kinds and blt; 0 for output).
  double column_l1() const { return l1_; }
  // Memory the streaming path keeps per coordinate (history rows), for docs and tests.
  std::size_t history() const;

  RowMatrix materialize() const;  // C, tests and small n only

 private:
  FactorizationKind kind_ = FactorizationKind::input;
  std::size_t n_ = 0;
  std::vector<double> c_;
  std::optional<Workload> A_;
  double norm_ = 1, l1_ = 0;
  double kappa_ = 1;
  std::vector<double> theta_, omega_;
};

// The JME error factor ||C||_{1->2}^2 ||A C^{-1}||_F^2 of a factorization of A: O(n) for A's own
// square root, O(n·buffers) for BLT, O(n·bands) for banded and input, O(n^2) for output.
double jme_error_factor(const Workload& A, const Factorization& C);

}  // namespace dpstats::moments
