// Workloads of continual release (docs/proofs/moments.md §1): n x n lower-triangular
// matrices A = diag(row_scale) · Toeplitz(a_0, a_1, ...), never materialised beyond tests.
// Row t of A gives the weights of the step-t release over the inputs 0..t (0-based).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/names.hpp"

namespace dpstats::moments {

enum class WorkloadKind { prefix, decay, average, window, adam };
}  // namespace dpstats::moments

// The head word of a workload spec ("decay" of "decay:0.9"; "adam-plain" is adam without bias
// correction).
template <>
struct dpstats::EnumNames<dpstats::moments::WorkloadKind> {
  using W = dpstats::moments::WorkloadKind;
  static constexpr std::string_view parameter = "workload";
  static constexpr std::array<std::pair<W, std::string_view>, 5> names = {
      {{W::prefix, "prefix"}, {W::decay, "decay"}, {W::average, "average"},
       {W::window, "window"}, {W::adam, "adam"}}};
};

namespace dpstats::moments {

class Workload {
 public:
  static Workload prefix(std::size_t n);                 // E1: a_k = 1
  static Workload decay(std::size_t n, double beta);     // E_beta: a_k = beta^k, beta in (0, 1)
  static Workload average(std::size_t n);                // V = diag(1/t) E1
  static Workload window(std::size_t n, std::size_t k);  // W_k: a_k = 1/k for k < window
  // Adam's EMA: a_k = (1 - beta) beta^k, times 1 / (1 - beta^t) with bias correction.
  static Workload adam(std::size_t n, double beta, bool bias_correction = true);
  // "prefix", "average", "decay:B", "window:K", "adam:B", "adam-plain:B".
  static Workload parse(const std::string& spec, std::size_t n);

  WorkloadKind kind() const { return kind_; }
  std::size_t steps() const { return n_; }
  double beta() const { return beta_; }
  std::size_t window_size() const { return window_; }
  bool bias_correction() const { return bias_correction_; }
  std::string name() const;

  // a_k of the Toeplitz part (0 for k >= n).
  double coefficient(std::size_t k) const;
  std::vector<double> coefficients(std::size_t m) const;  // a_0 .. a_{m-1}
  // The diagonal row scale D_t (t 0-based); 1 unless average or bias-corrected Adam. It is
  // non-increasing in t for every workload here, which the output factorization relies on.
  double row_scale(std::size_t t) const;
  bool has_row_scale() const;
  double at(std::size_t t, std::size_t i) const;  // A[t, i], 0-based
  RowMatrix materialize() const;                  // tests and small n only
  bool operator==(const Workload& o) const;

 private:
  WorkloadKind kind_ = WorkloadKind::prefix;
  std::size_t n_ = 0, window_ = 0;
  double beta_ = 0;
  bool bias_correction_ = false;
};

// Streams (A v)_t for a stream v_0, v_1, ... of `dim`-vectors in O(dim) state (O(k·dim) for a
// window): running sums and EMAs, never the history.
class WorkloadState {
 public:
  WorkloadState(const Workload& A, std::size_t dim);
  // Feeds v_t (t = number of earlier calls) and writes (A v)_t to out (dim values).
  void push(const double* v, double* out);
  // The same on coordinates [begin, end) of the dim-long v and out, without advancing the step:
  // disjoint ranges may run on different threads; advance() once they all have.
  void push(const double* v, double* out, std::size_t begin, std::size_t end);
  void advance() { ++t_; }
  std::size_t step() const { return t_; }

 private:
  Workload A_;
  std::size_t dim_, t_ = 0;
  Vector state_;   // running sum / EMA
  RowMatrix ring_; // window: the last k inputs
};

}  // namespace dpstats::moments
