// Softmax classifiers for private training (docs/proofs/training.md §1, §3): multinomial
// logistic regression and a one-hidden-layer ReLU MLP, with per-example gradients that never
// materialise one gradient vector per example.
//
// Every layer is affine, z = [a, 1] W with W an (in+1) x out block (last row: the bias), so the
// per-example gradient of a layer is the outer product [a_i, 1] ⊗ δ_i and
//   ||g_i||^2   = Σ_layers ||[a_i,1]||^2 ||δ_i||^2                (ghost norm)
//   Σ_j g_ij^4  = Σ_layers ||[a_i,1]∘[a_i,1]||^2 ||δ_i∘δ_i||^2     (for joint clipping, §2.5)
//   Σ_i w_i g_i       = per layer A^T diag(w) Δ                     (one GEMM)
//   Σ_i w_i g_i∘g_i   = per layer (A∘A)^T diag(w) (Δ∘Δ)             (one GEMM; JME's x∘x, §2.8)
// at O(in + out) per example for the norms, so clipping costs about what the plain gradient costs.
// Parameters are one flat vector (layer 1 then layer 2, each block row-major).
#pragma once
#include "dpstats/names.hpp"
#include <functional>
#include <string>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats::optimize {

enum class ModelKind { logistic, mlp };
}  // namespace dpstats::optimize

template <>
struct dpstats::EnumNames<dpstats::optimize::ModelKind> {
  using M = dpstats::optimize::ModelKind;
  static constexpr std::string_view parameter = "model";
  static constexpr std::array<std::pair<M, std::string_view>, 2> names = {
      {{M::logistic, "logistic"}, {M::mlp, "mlp"}}};
};

namespace dpstats::optimize {
const char* to_string(ModelKind m);

class Classifier {
 public:
  Classifier() = default;
  // Zero-initialised multinomial logistic regression: features -> classes.
  static Classifier logistic(Eigen::Index features, int classes);
  // features -> hidden (ReLU) -> classes; He-normal first layer, small second layer, zero biases,
  // drawn from `init` (data-independent, so any Rng will do).
  static Classifier mlp(Eigen::Index features, Eigen::Index hidden, int classes, Rng& init);

  ModelKind kind() const { return kind_; }
  Eigen::Index features() const { return features_; }
  Eigen::Index hidden() const { return hidden_; }
  int classes() const { return classes_; }
  Eigen::Index num_parameters() const { return params_.size(); }
  const Vector& parameters() const { return params_; }
  Vector& parameters() { return params_; }
  int layers() const { return kind_ == ModelKind::mlp ? 2 : 1; }
  // Input and output width of layer l (0-based), without the bias column.
  Eigen::Index layer_in(int l) const;
  Eigen::Index layer_out(int l) const;
  Eigen::Index layer_offset(int l) const;  // first parameter of layer l

  // Logits of each row of X (n x features).
  RowMatrix logits(const ConstMatrixRef& X) const;
  std::vector<int> predict(const ConstMatrixRef& X) const;
  double accuracy(const ConstMatrixRef& X, const std::vector<int>& y) const;
  // Mean softmax cross-entropy.
  double mean_loss(const ConstMatrixRef& X, const std::vector<int>& y) const;

 private:
  ModelKind kind_ = ModelKind::logistic;
  Eigen::Index features_ = 0, hidden_ = 0;
  int classes_ = 0;
  Vector params_;
};

// Forward and backward pass of one batch at fixed parameters: activations [a, 1] and output
// deltas per layer, from which per-example norms and weighted gradient sums are read.
class BatchGradients {
 public:
  static constexpr Eigen::Index kBatchBlock = 64;
  // rows: indices into X / y. The batch is cut into blocks of kBatchBlock examples whatever
  // `threads` is (>= 1 blocks run at once), and the per-block gradient sums are added in block
  // order, so every output is the same for any thread count. Every per-example value
  // (activations, deltas, loss, norms) is computed by per-example arithmetic in a fixed order,
  // so it is the same whichever batch, block, thread or rank holds the example (what makes the
  // lattice sum below split-independent).
  BatchGradients(const Classifier& model, const ConstMatrixRef& X, const std::vector<int>& y,
                 const std::vector<Eigen::Index>& rows, int threads = 1);
  Eigen::Index size() const { return size_; }
  const Vector& losses() const { return loss_; }  // per-example cross-entropy
  Vector norms2() const;                          // ||g_i||^2
  Vector norms4() const;                          // Σ_j g_ij^4
  // out = Σ_i w_i g_i (and, when `squares` is non-null, *squares = Σ_i w2_i g_i∘g_i).
  void weighted_sum(const Vector& w, Vector& out, const Vector* w2 = nullptr,
                    Vector* squares = nullptr) const;
  // The exact lattice sum of the scaled per-example gradients (docs/proofs/training.md §4):
  // entry j is Σ_i round(f1_i g_ij), and, when f2 is given, entry P + j is Σ_i round(f2_i g_ij²)
  // (round: to nearest, ties to even; i over the examples with f_i > 0), added as integers, so
  // the result does not depend on the order, the thread count or how the examples are split
  // over ranks. Exact integers as doubles; the caller keeps every |f_i g_ij| (and f2_i g_ij²)
  // <= 2^51 and each sum's total below 2^53 (GradientRelease's lattice does).
  Vector lattice_sum(const Vector& f1, const Vector* f2 = nullptr) const;
  // The full per-example gradient of example i (tests and small checks only).
  Vector example_gradient(Eigen::Index i) const;

 private:
  const Classifier* model_;
  Eigen::Index size_ = 0;
  int threads_ = 1;
  std::vector<RowMatrix> act_;    // per layer: size x (in + 1), last column 1
  std::vector<RowMatrix> delta_;  // per layer: size x out
  Vector loss_;
};

// Runs fn(begin, end) on `threads` contiguous blocks of [0, n) (std::thread; inline when 1).
void parallel_blocks(Eigen::Index n, int threads,
                     const std::function<void(Eigen::Index, Eigen::Index)>& fn);

}  // namespace dpstats::optimize
