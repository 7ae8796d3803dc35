// Softmax classifiers with per-example gradients; see include/dpstats/training/classifier.hpp.
#include "dpstats/training/classifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/ordered_chunks.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/random/float_normal.hpp"

namespace dpstats::optimize {
namespace {

using ConstLayer = Eigen::Map<const RowMatrix>;

ConstLayer layer(const Classifier& m, int l) {
  return ConstLayer(m.parameters().data() + m.layer_offset(l), m.layer_in(l) + 1, m.layer_out(l));
}

// Row-wise softmax in place; returns log-sum-exp per row.
Vector softmax_rows(RowMatrix& Z) {
  Vector lse(Z.rows());
  for (Eigen::Index i = 0; i < Z.rows(); ++i) {
    const double m = Z.row(i).maxCoeff();
    Z.row(i) = (Z.row(i).array() - m).exp().matrix();
    const double s = Z.row(i).sum();
    Z.row(i) /= s;
    lse(i) = m + std::log(s);
  }
  return lse;
}

void check_labels(const ConstMatrixRef& X, const std::vector<int>& y, int classes) {
  require(static_cast<Eigen::Index>(y.size()) == X.rows(),
          fmt::format("labels: need one per row of X ({}), got {}", X.rows(), y.size()));
  for (std::size_t i = 0; i < y.size(); ++i)
    require(y[i] >= 0 && y[i] < classes, "label {} at row {} is outside 0..{}", y[i], i,
            classes - 1);
}

}  // namespace

const char* to_string(ModelKind m) { return name_of(m).data(); }  // names are literals

ModelKind parse_model_kind(const std::string& name) { return parse_enum<ModelKind>(name); }

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
  const Eigen::Index d = model.features(), H = model.hidden();
  const auto blocks = static_cast<std::size_t>((size_ + kBatchBlock - 1) / kBatchBlock);
  parallel_tasks(blocks, threads_, [&](std::size_t k) {  // a cut fixed by the batch size alone
    const Eigen::Index b = static_cast<Eigen::Index>(k) * kBatchBlock;
    const Eigen::Index e = std::min(size_, b + kBatchBlock);
    const Eigen::Index n = e - b;
    auto A0 = act_[0].middleRows(b, n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Eigen::Index r = rows[static_cast<std::size_t>(b + i)];
      A0.row(i).head(d) = X.row(r);
    }
    A0.col(d).setOnes();
    RowMatrix Z = A0 * layer(model, 0);
    if (model.kind() == ModelKind::mlp) {
      auto A1 = act_[1].middleRows(b, n);
      A1.leftCols(H) = Z.cwiseMax(0.0);
      A1.col(H).setOnes();
      Z = A1 * layer(model, 1);
    }
    std::vector<int> label(static_cast<std::size_t>(n));
    Vector z_label(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      label[static_cast<std::size_t>(i)] = y[static_cast<std::size_t>(rows[static_cast<std::size_t>(b + i)])];
      z_label(i) = Z(i, label[static_cast<std::size_t>(i)]);
    }
    const Vector lse = softmax_rows(Z);  // Z now holds P
    for (Eigen::Index i = 0; i < n; ++i) {
      loss_(b + i) = lse(i) - z_label(i);
      Z(i, label[static_cast<std::size_t>(i)]) -= 1;
    }
    delta_[static_cast<std::size_t>(L - 1)].middleRows(b, n) = Z;
    if (model.kind() == ModelKind::mlp) {
      auto D1 = delta_[0].middleRows(b, n);
      D1 = Z * layer(model, 1).topRows(H).transpose();
      D1.array() *= (act_[1].middleRows(b, n).leftCols(H).array() > 0).cast<double>();
    }
  });
}

Vector BatchGradients::norms2() const {
  Vector out = Vector::Zero(size_);
  for (std::size_t l = 0; l < act_.size(); ++l)
    out.array() += act_[l].rowwise().squaredNorm().array() * delta_[l].rowwise().squaredNorm().array();
  return out;
}

Vector BatchGradients::norms4() const {
  Vector out = Vector::Zero(size_);
  for (std::size_t l = 0; l < act_.size(); ++l)
    out.array() += act_[l].array().square().square().rowwise().sum() *
                   delta_[l].array().square().square().rowwise().sum();
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
