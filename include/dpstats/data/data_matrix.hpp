// DataMatrix: the values a reader returns, a read-only row-major n x d view that keeps its
// storage alive. The storage is either a matrix the reader filled or a memory-mapped .npy file
// used in place (float64, C order: zero-copy). It is an Eigen::Map, so it binds to ConstMatrixRef
// and supports every read-only Eigen expression (rows(), col(j), rightCols(k), X(i, j), ==)
// without a copy; copies share the storage. The input layer's scan marks the values it found
// finite (checked_finite), so that a release does not scan them again (data/checked_rows.hpp).
#pragma once
#include <memory>
#include <new>
#include <utility>

#include "dpstats/data/matrix.hpp"

namespace dpstats {

namespace input_detail {
struct FiniteScan;  // src/data: the one scan that may mark a DataMatrix finite
}

class DataMatrix : public Eigen::Map<const RowMatrix> {
 public:
  using Base = Eigen::Map<const RowMatrix>;

  DataMatrix() : Base(nullptr, 0, 0) {}
  // Takes the matrix (no copy of its values).
  DataMatrix(RowMatrix m)  // NOLINT(google-explicit-constructor): a filled matrix is a DataMatrix
      : DataMatrix() {
    auto owned = std::make_shared<RowMatrix>(std::move(m));
    rebind(owned->data(), owned->rows(), owned->cols());
    owner_ = std::move(owned);
  }
  // A view of rows x cols doubles at `data`, kept valid by `owner` (e.g. a file mapping).
  DataMatrix(std::shared_ptr<const void> owner, const double* data, Eigen::Index rows,
             Eigen::Index cols)
      : Base(data, rows, cols), owner_(std::move(owner)) {}

  DataMatrix(const DataMatrix& o)
      : Base(o.data(), o.rows(), o.cols()), owner_(o.owner_), finite_(o.finite_) {}
  DataMatrix(DataMatrix&& o) noexcept
      : Base(o.data(), o.rows(), o.cols()), owner_(std::move(o.owner_)), finite_(o.finite_) {
    o.rebind(nullptr, 0, 0);
    o.finite_ = false;
  }
  DataMatrix& operator=(const DataMatrix& o) {
    if (this != &o) {
      owner_ = o.owner_;
      finite_ = o.finite_;
      rebind(o.data(), o.rows(), o.cols());
    }
    return *this;
  }
  DataMatrix& operator=(DataMatrix&& o) noexcept {
    if (this != &o) {
      owner_ = std::move(o.owner_);
      finite_ = o.finite_;
      rebind(o.data(), o.rows(), o.cols());
      o.rebind(nullptr, 0, 0);
      o.finite_ = false;
    }
    return *this;
  }
  ~DataMatrix() = default;

  // What keeps the values alive (share it to keep a view beyond this object, e.g. a NumPy array).
  const std::shared_ptr<const void>& owner() const { return owner_; }
  // The input layer's scan found every value finite (and at least one row and one column):
  // what check_data would accept. False for a matrix made any other way.
  bool checked_finite() const { return finite_; }

 private:
  friend struct input_detail::FiniteScan;

  // Re-points the Map base (Eigen's own Ref re-seats its Map base the same way).
  void rebind(const double* data, Eigen::Index rows, Eigen::Index cols) {
    ::new (static_cast<Base*>(this)) Base(data, rows, cols);
  }

  std::shared_ptr<const void> owner_;
  bool finite_ = false;
};

}  // namespace dpstats
