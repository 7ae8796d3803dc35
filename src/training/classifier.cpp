// Softmax classifiers with per-example gradients; see include/dpstats/training/classifier.hpp.
#include "dpstats/training/classifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "dpstats/ordered_chunks.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/random/float_normal.hpp"

namespace dpstats::optimize {
namespace {

using ConstLayer = Eigen::Map<const RowMatrix>;

ConstLayer layer(const Classifier& m, int l) {
  return ConstLayer(m.parameters().data() + m.layer_offset(l), m.layer_in(l) + 1, m.layer_out(l));
}

void check_labels(const ConstMatrixRef& X, const std::vector<int>& y, int classes) {
  require(static_cast<Eigen::Index>(y.size()) == X.rows(),
          "labels: need one per row of X (the counts are not shown)");
  for (std::size_t i = 0; i < y.size(); ++i)
    require(y[i] >= 0 && y[i] < classes, "label {} at row {} is outside 0..{}", y[i], i,
            classes - 1);
}

}  // namespace

const char* to_string(ModelKind m) { return name_of(m).data(); }  // names are literals

// The library's one parallel helper (parallel.hpp): blocks of at least 16 examples, one per
// thread, the same cut as before; a worker's exception reaches the caller.
void parallel_blocks(Eigen::Index n, int threads,
                     const std::function<void(Eigen::Index, Eigen::Index)>& fn) {
  parallel_ranges(n, threads, 16, [&](int, Eigen::Index b, Eigen::Index e) { fn(b, e); });
}

Classifier Classifier::logistic(Eigen::Index features, int classes) {
  require(features >= 1, fmt::format("features must be >= 1, got {}", features));
  require(classes >= 2, fmt::format("classes must be >= 2, got {}", classes));
  Classifier c;
  c.kind_ = ModelKind::logistic;
  c.features_ = features;
  c.classes_ = classes;
  c.params_ = Vector::Zero((features + 1) * classes);
  return c;
}

Classifier Classifier::mlp(Eigen::Index features, Eigen::Index hidden, int classes, Rng& init) {
  require(features >= 1, fmt::format("features must be >= 1, got {}", features));
  require(hidden >= 1, fmt::format("hidden units must be >= 1, got {}", hidden));
  require(classes >= 2, fmt::format("classes must be >= 2, got {}", classes));
  Classifier c;
  c.kind_ = ModelKind::mlp;
  c.features_ = features;
  c.hidden_ = hidden;
  c.classes_ = classes;
  c.params_ = Vector::Zero((features + 1) * hidden + (hidden + 1) * classes);
  const double s1 = std::sqrt(2.0 / static_cast<double>(features));
  const double s2 = std::sqrt(1.0 / static_cast<double>(hidden));
  for (Eigen::Index r = 0; r < features; ++r)
    for (Eigen::Index j = 0; j < hidden; ++j) c.params_(r * hidden + j) = s1 * standard_normal(init);
  const Eigen::Index o2 = c.layer_offset(1);
  for (Eigen::Index r = 0; r < hidden; ++r)
    for (int j = 0; j < classes; ++j) c.params_(o2 + r * classes + j) = s2 * standard_normal(init);
  return c;
}

Eigen::Index Classifier::layer_in(int l) const { return l == 0 ? features_ : hidden_; }
Eigen::Index Classifier::layer_out(int l) const {
  return (kind_ == ModelKind::mlp && l == 0) ? hidden_ : classes_;
}
Eigen::Index Classifier::layer_offset(int l) const { return l == 0 ? 0 : (features_ + 1) * hidden_; }

RowMatrix Classifier::logits(const ConstMatrixRef& X) const {
  require(X.cols() == features_,
          fmt::format("X has {} columns, the model expects {}", X.cols(), features_));
  const auto W1 = layer(*this, 0);
  RowMatrix Z = (X * W1.topRows(features_)).rowwise() + W1.row(features_);
  if (kind_ == ModelKind::logistic) return Z;
  Z = Z.cwiseMax(0.0);
  const auto W2 = layer(*this, 1);
  return (Z * W2.topRows(hidden_)).rowwise() + W2.row(hidden_);
}

std::vector<int> Classifier::predict(const ConstMatrixRef& X) const {
  const RowMatrix Z = logits(X);
  std::vector<int> out(static_cast<std::size_t>(Z.rows()));
  for (Eigen::Index i = 0; i < Z.rows(); ++i) {
    Eigen::Index k;
    Z.row(i).maxCoeff(&k);
    out[static_cast<std::size_t>(i)] = static_cast<int>(k);
  }
  return out;
}

double Classifier::accuracy(const ConstMatrixRef& X, const std::vector<int>& y) const {
  check_labels(X, y, classes_);
  const auto p = predict(X);
  std::size_t right = 0;
  for (std::size_t i = 0; i < p.size(); ++i) right += p[i] == y[i];
  return static_cast<double>(right) / static_cast<double>(std::max<std::size_t>(1, p.size()));
}

double Classifier::mean_loss(const ConstMatrixRef& X, const std::vector<int>& y) const {
  check_labels(X, y, classes_);
  RowMatrix Z = logits(X);
  double total = 0;
  for (Eigen::Index i = 0; i < Z.rows(); ++i) {
    const double m = Z.row(i).maxCoeff();
    total += m + std::log((Z.row(i).array() - m).exp().sum()) - Z(i, y[static_cast<std::size_t>(i)]);
  }
  return total / static_cast<double>(std::max<Eigen::Index>(1, Z.rows()));
}

namespace {

// z_i = sum_r a_ir W_r over r = 0..in (a_i,in = 1: the bias row last), for the n rows of A (row
// stride in + 1) into Z (n x out, row-major). Every z_ik is the same sequence of floating-point
// operations whatever the other rows are: r in order, zero activations skipped (adding 0 W_rk
// leaves z_ik as it is), the k loop element-wise. So an example's forward values depend on that
// example and the parameters alone, not on which batch, block, thread or rank computes it
// (docs/proofs/training.md §4). The r-outer order keeps W's row in L1 across the block.
// fp-contract=off: the element-wise arithmetic of the kernels below is the same IEEE operations
// (a multiply, then an add) in every clone, so the clone a CPU picks does not change a value.
// (Byte identity across ranks still assumes one CPU kind: libm's exp and log, used by the
// softmax, may pick FMA code paths per CPU.) The widths 2..16 (the class count, the last
// layer's width) get a compiled-in width: the inner loop then has no run-time set-up.
// Cloned for AVX-512 and AVX2 (chosen at run time); the clones differ in vector width only.
#define DPSTATS_ELEMENTWISE \
  __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))

template <int W, class F>
bool try_width(Eigen::Index out, F& f) {
  if (out != W) return false;
  f(std::integral_constant<int, W>{});
  return true;
}
// f(std::integral_constant<int, W>) with W = out for out in 2..16, else W = 0 (any width).
template <class F>
void dispatch_width(Eigen::Index out, F&& f) {
  [&]<int... W>(std::integer_sequence<int, W...>) {
    if (!(try_width<W + 2>(out, f) || ...)) f(std::integral_constant<int, 0>{});
  }(std::make_integer_sequence<int, 15>{});
}

template <int Width>
DPSTATS_ELEMENTWISE void affine_rows_w(const double* A, Eigen::Index n, Eigen::Index in,
                                       const double* W, Eigen::Index out_any, double* Z) {
  const Eigen::Index out = Width > 0 ? Width : out_any;
  std::fill(Z, Z + n * out, 0.0);
  if constexpr (Width > 0) {  // narrow W (fits L1/L2): one example at a time, A's row in order
    for (Eigen::Index i = 0; i < n; ++i) {
      const double* a = A + i * (in + 1);
      double* z = Z + i * out;
      for (Eigen::Index r = 0; r <= in; ++r) {
        if (a[r] == 0) continue;
        const double* w = W + r * out;
        for (Eigen::Index k = 0; k < out; ++k) z[k] += a[r] * w[k];
      }
    }
    return;
  }
  for (Eigen::Index r = 0; r <= in; ++r) {  // wide W: its row stays in L1 across the block
    const double* w = W + r * out;
    for (Eigen::Index i = 0; i < n; ++i) {
      const double a = A[i * (in + 1) + r];
      if (a == 0) continue;
      double* z = Z + i * out;
      for (Eigen::Index k = 0; k < out; ++k) z[k] += a * w[k];
    }
  }
}

void affine_rows(const double* A, Eigen::Index n, Eigen::Index in, const double* W,
                 Eigen::Index out, double* Z) {
  dispatch_width(out, [&](auto w) { affine_rows_w<decltype(w)::value>(A, n, in, W, out, Z); });
}

// Softmax of one row of logits in place (z becomes p), in plain loops (in order, no
// alignment-dependent reduction); returns the log-sum-exp.
double softmax_row(double* z, Eigen::Index k) {
  double m = z[0];
  for (Eigen::Index j = 1; j < k; ++j) m = std::max(m, z[j]);
  double s = 0;
  for (Eigen::Index j = 0; j < k; ++j) {
    z[j] = std::exp(z[j] - m);
    s += z[j];
  }
  for (Eigen::Index j = 0; j < k; ++j) z[j] /= s;
  return m + std::log(s);
}

double row_sum_of(const double* x, Eigen::Index k, int power) {
  double s = 0;  // in order: the same value for a row wherever it is stored
  for (Eigen::Index j = 0; j < k; ++j) s += power == 2 ? x[j] * x[j] : (x[j] * x[j]) * (x[j] * x[j]);
  return s;
}

}  // namespace

BatchGradients::BatchGradients(const Classifier& model, const ConstMatrixRef& X,
                               const std::vector<int>& y, const std::vector<Eigen::Index>& rows,
                               int threads)
    : model_(&model), size_(static_cast<Eigen::Index>(rows.size())), threads_(std::max(1, threads)) {
  require(X.cols() == model.features(),
          fmt::format("X has {} columns, the model expects {}", X.cols(), model.features()));
  const int L = model.layers();
  act_.resize(static_cast<std::size_t>(L));
  delta_.resize(static_cast<std::size_t>(L));
  for (int l = 0; l < L; ++l) {
    act_[static_cast<std::size_t>(l)].resize(size_, model.layer_in(l) + 1);
    delta_[static_cast<std::size_t>(l)].resize(size_, model.layer_out(l));
  }
  loss_.resize(size_);
  const Eigen::Index d = model.features(), H = model.hidden(), C = model.classes();
  const auto blocks = static_cast<std::size_t>((size_ + kBatchBlock - 1) / kBatchBlock);
  parallel_tasks(blocks, threads_, [&](std::size_t k) {  // a cut fixed by the batch size alone
    const Eigen::Index b = static_cast<Eigen::Index>(k) * kBatchBlock;
    const Eigen::Index n = std::min(size_, b + kBatchBlock) - b;
    auto A0 = act_[0].middleRows(b, n);
    for (Eigen::Index i = 0; i < n; ++i) A0.row(i).head(d) = X.row(rows[static_cast<std::size_t>(b + i)]);
    A0.col(d).setOnes();
    // Per-example arithmetic only (affine_rows, softmax_row, in-order loops): each example's
    // activations, deltas and loss are functions of that example, whatever block it lands in.
    const std::size_t last = static_cast<std::size_t>(L - 1);
    double* Z = delta_[last].middleRows(b, n).data();
    if (model.kind() == ModelKind::mlp) {
      RowMatrix Z1(n, H);
      affine_rows(A0.data(), n, d, layer(model, 0).data(), H, Z1.data());
      auto A1 = act_[1].middleRows(b, n);
      A1.leftCols(H) = Z1.cwiseMax(0.0);
      A1.col(H).setOnes();
      affine_rows(A1.data(), n, H, layer(model, 1).data(), C, Z);
    } else {
      affine_rows(A0.data(), n, d, layer(model, 0).data(), C, Z);
    }
    for (Eigen::Index i = 0; i < n; ++i) {
      double* z = Z + i * C;
      const int label = y[static_cast<std::size_t>(rows[static_cast<std::size_t>(b + i)])];
      const double z_label = z[label];
      loss_(b + i) = softmax_row(z, C) - z_label;  // z now holds p
      z[label] -= 1;                               // the output delta p - e_y
    }
    if (model.kind() != ModelKind::mlp) return;
    const double* W2 = layer(model, 1).data();
    for (Eigen::Index i = 0; i < n; ++i) {
      const double* a1 = act_[1].row(b + i).data();
      const double* d2 = Z + i * C;
      double* d1 = delta_[0].row(b + i).data();
      for (Eigen::Index h = 0; h < H; ++h) {
        double s = 0;
        for (Eigen::Index j = 0; j < C; ++j) s += d2[j] * W2[h * C + j];
        d1[h] = a1[h] > 0 ? s : 0.0;
      }
    }
  });
}

Vector BatchGradients::norms2() const {
  Vector out = Vector::Zero(size_);
  for (std::size_t l = 0; l < act_.size(); ++l)
    for (Eigen::Index i = 0; i < size_; ++i)
      out(i) += row_sum_of(act_[l].row(i).data(), act_[l].cols(), 2) *
                row_sum_of(delta_[l].row(i).data(), delta_[l].cols(), 2);
  return out;
}

Vector BatchGradients::norms4() const {
  Vector out = Vector::Zero(size_);
  for (std::size_t l = 0; l < act_.size(); ++l)
    for (Eigen::Index i = 0; i < size_; ++i)
      out(i) += row_sum_of(act_[l].row(i).data(), act_[l].cols(), 4) *
                row_sum_of(delta_[l].row(i).data(), delta_[l].cols(), 4);
  return out;
}

namespace {

// words[r out + k] += round(f_i a_ir d_ik) (or, squares, round(f_i a_ir^2 d_ik^2)) for the
// examples i in [b, e): one layer of the lattice sum. Integer words (the offset trick of
// exact::add, the constant removed per term so that skipped terms need no count): any order of
// the examples gives the same words. Rows of W stay in L1 across a block of examples.
// Narrow rows (2..16 outputs): one example at a time, and the first and square terms of an
// activation in one visit (JME, joint clipping), so a row of A is read once.
template <int Width>
DPSTATS_ELEMENTWISE void lattice_narrow(const RowMatrix& A, const RowMatrix& D, const Vector& f1,
                                        const Vector* f2, Eigen::Index b, Eigen::Index e,
                                        std::uint64_t* words1, std::uint64_t* words2) {
  const Eigen::Index in = A.cols();
  for (Eigen::Index i = b; i < e; ++i) {
    const bool one = f1(i) != 0, two = f2 != nullptr && (*f2)(i) != 0;
    if (!one && !two) continue;
    const double* a = A.row(i).data();
    const double* d = D.row(i).data();
    double t1[Width], t2[Width];
    for (int k = 0; k < Width; ++k) t1[k] = d[k], t2[k] = d[k] * d[k];
    for (Eigen::Index r = 0; r < in; ++r) {
      if (a[r] == 0) continue;
      if (one) {
        const double s = a[r] * f1(i);
        std::uint64_t* w = words1 + r * Width;
        for (int k = 0; k < Width; ++k)
          w[k] += std::bit_cast<std::uint64_t>(s * t1[k] + exact::kRound) - exact::kRoundWord;
      }
      if (two) {
        const double s = (a[r] * a[r]) * (*f2)(i);
        std::uint64_t* w = words2 + r * Width;
        for (int k = 0; k < Width; ++k)
          w[k] += std::bit_cast<std::uint64_t>(s * t2[k] + exact::kRound) - exact::kRoundWord;
      }
    }
  }
}

// Wide rows: a row of W's words stays in L1 across a block of examples.
DPSTATS_ELEMENTWISE void lattice_wide(const RowMatrix& A, const RowMatrix& D, const Vector& f,
                                      bool squares, Eigen::Index b, Eigen::Index e,
                                      std::uint64_t* words) {
  const Eigen::Index in = A.cols(), out = D.cols();
  for (Eigen::Index b0 = b; b0 < e; b0 += BatchGradients::kBatchBlock) {
    const Eigen::Index e0 = std::min(e, b0 + BatchGradients::kBatchBlock);
    for (Eigen::Index r = 0; r < in; ++r) {
      std::uint64_t* __restrict__ w = words + r * out;
      for (Eigen::Index i = b0; i < e0; ++i) {
        const double a = A(i, r);
        if (a == 0 || f(i) == 0) continue;
        const double* __restrict__ d = D.row(i).data();
        const Eigen::Index width = out;
        if (squares) {
          const double s = (a * a) * f(i);
          for (Eigen::Index k = 0; k < width; ++k)
            w[k] += std::bit_cast<std::uint64_t>(s * (d[k] * d[k]) + exact::kRound) - exact::kRoundWord;
        } else {
          const double s = a * f(i);
          for (Eigen::Index k = 0; k < width; ++k)
            w[k] += std::bit_cast<std::uint64_t>(s * d[k] + exact::kRound) - exact::kRoundWord;
        }
      }
    }
  }
}

// One layer of the lattice sum: words1 += the f1 terms, words2 += the f2 square terms (f2 may
// be null).
void lattice_layer(const RowMatrix& A, const RowMatrix& D, const Vector& f1, const Vector* f2,
                   Eigen::Index b, Eigen::Index e, std::uint64_t* words1, std::uint64_t* words2) {
  bool narrow = false;
  dispatch_width(D.cols(), [&](auto w) {
    constexpr int W = decltype(w)::value;
    if constexpr (W > 0) {
      lattice_narrow<W>(A, D, f1, f2, b, e, words1, words2);
      narrow = true;
    }
  });
  if (narrow) return;
  lattice_wide(A, D, f1, false, b, e, words1);
  if (f2) lattice_wide(A, D, *f2, true, b, e, words2);
}

}  // namespace

Vector BatchGradients::lattice_sum(const Vector& f1, const Vector* f2) const {
  require(f1.size() == size_ && (f2 == nullptr || f2->size() == size_),
          "lattice_sum: one factor per example");
  const Eigen::Index P = model_->num_parameters(), D = f2 ? 2 * P : P;
  const auto width = static_cast<std::size_t>(D);
  std::vector<std::uint64_t> words(static_cast<std::size_t>(threads_) * width, 0);
  parallel_ranges(size_, threads_, kBatchBlock, [&](int p, std::int64_t b, std::int64_t e) {
    std::uint64_t* w = words.data() + static_cast<std::size_t>(p) * width;
    for (std::size_t l = 0; l < act_.size(); ++l) {
      const Eigen::Index off = model_->layer_offset(static_cast<int>(l));
      lattice_layer(act_[l], delta_[l], f1, f2, b, e, w + off, f2 ? w + P + off : nullptr);
    }
  });
  Vector out(D);
  for (std::size_t j = 0; j < width; ++j) {
    std::uint64_t s = 0;
    for (int p = 0; p < threads_; ++p) s += words[static_cast<std::size_t>(p) * width + j];
    out(static_cast<Eigen::Index>(j)) = static_cast<double>(static_cast<std::int64_t>(s));
  }
  return out;
}

void BatchGradients::weighted_sum(const Vector& w, Vector& out, const Vector* w2,
                                  Vector* squares) const {
  require(w.size() == size_, "weighted_sum: one weight per example");
  require((w2 == nullptr) == (squares == nullptr), "weighted_sum: w2 and squares go together");
  require(w2 == nullptr || w2->size() == size_, "weighted_sum: one square weight per example");
  const Eigen::Index P = model_->num_parameters();
  out.setZero(P);
  if (squares) squares->setZero(P);
  struct Part {
    Vector g, sq;
  };
  // Blocks of kBatchBlock examples (the forward pass's cut), summed in block order: the same sums
  // for any thread count.
  ordered_chunks(
      size_, kBatchBlock, threads_,
      [&] { return Part{Vector::Zero(P), squares ? Vector::Zero(P) : Vector()}; },
      [&](Part& part, Eigen::Index b, Eigen::Index e) {
        const Eigen::Index n = e - b;
        for (std::size_t l = 0; l < act_.size(); ++l) {
          const int li = static_cast<int>(l);
          const auto A = act_[l].middleRows(b, n);
          const auto D = delta_[l].middleRows(b, n);
          Eigen::Map<RowMatrix> G(part.g.data() + model_->layer_offset(li), A.cols(), D.cols());
          G.noalias() = A.transpose() * (w.segment(b, n).asDiagonal() * D);
          if (squares) {
            Eigen::Map<RowMatrix> S(part.sq.data() + model_->layer_offset(li), A.cols(), D.cols());
            const RowMatrix A2 = A.array().square().matrix();
            const RowMatrix D2 = w2->segment(b, n).asDiagonal() * D.array().square().matrix();
            S.noalias() = A2.transpose() * D2;
          }
        }
      },
      [&](const Part& part) {
        out += part.g;
        if (squares) *squares += part.sq;
      });
}

Vector BatchGradients::example_gradient(Eigen::Index i) const {
  require(i >= 0 && i < size_, "example_gradient: index out of range");
  Vector g(model_->num_parameters());
  for (std::size_t l = 0; l < act_.size(); ++l) {
    Eigen::Map<RowMatrix> G(g.data() + model_->layer_offset(static_cast<int>(l)), act_[l].cols(),
                            delta_[l].cols());
    G = act_[l].row(i).transpose() * delta_[l].row(i);
  }
  return g;
}

}  // namespace dpstats::optimize
