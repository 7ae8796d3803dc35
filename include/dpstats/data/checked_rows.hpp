// The finiteness check's result travelling with the rows it was made on: a release checks its rows
// once (CheckedRows) and every estimate it runs on them reads a RowsView that says so; a plain
// matrix makes an unchecked view, so an estimate never skips the check on rows nobody checked;
// a DataMatrix the input layer's scan found finite makes a checked one (the same check, made
// while reading).
#pragma once
#include <type_traits>

#include "dpstats/data/data_matrix.hpp"
#include "dpstats/data/matrix.hpp"

namespace dpstats {

// Rows that check_data accepted (at least one row, every cell finite). The constructor is the
// check: nothing else makes one. One process: with more ranks each rank's check is collective.
class CheckedRows {
 public:
  explicit CheckedRows(const ConstMatrixRef& X, int threads = 1) : X_(X) {
    check_data(X_, "X", threads);
  }
  const ConstMatrixRef& matrix() const { return X_; }

 private:
  ConstMatrixRef X_;
};

// The rows an estimate reads and whether they were checked: true only from a CheckedRows or a
// DataMatrix whose values the input layer checked (DataMatrix::checked_finite).
class RowsView {
 public:
  template <class M>
    requires(std::is_convertible_v<const M&, ConstMatrixRef> &&
             !std::is_same_v<std::remove_cvref_t<M>, CheckedRows> &&
             !std::is_same_v<std::remove_cvref_t<M>, DataMatrix>)
  RowsView(const M& X) : X_(X) {}  // NOLINT: implicit, a plain matrix is an unchecked view
  RowsView(const DataMatrix& X) : X_(X), checked_(X.checked_finite()) {}  // NOLINT: implicit
  RowsView(const CheckedRows& X) : X_(X.matrix()), checked_(true) {}  // NOLINT: implicit

  const ConstMatrixRef& matrix() const { return X_; }
  bool checked() const { return checked_; }

 private:
  ConstMatrixRef X_;
  bool checked_ = false;
};

}  // namespace dpstats
