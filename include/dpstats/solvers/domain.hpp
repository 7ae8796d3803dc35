// Convex domains with Euclidean projections (docs/proofs/user-level.md §1, §3).
#pragma once
#include <memory>

#include "dpstats/data/matrix.hpp"

namespace dpstats::optimize {

class Domain {
 public:
  virtual ~Domain() = default;
  virtual std::int64_t dimension() const = 0;
  // Euclidean projection Π_X, in place.
  virtual void project(Vector& x) const = 0;
  virtual double diameter() const = 0;       // R of Assumption 1.1
  virtual double max_norm() const = 0;       // sup ‖x‖ over X
  virtual Vector center() const = 0;         // the default starting point
  virtual bool contains(const Vector& x, double tol = 0) const = 0;
};

class Ball final : public Domain {
 public:
  Ball(Vector center, double radius);
  std::int64_t dimension() const override { return center_.size(); }
  void project(Vector& x) const override;
  double diameter() const override { return 2 * radius_; }
  double max_norm() const override { return center_.norm() + radius_; }
  Vector center() const override { return center_; }
  bool contains(const Vector& x, double tol = 0) const override;
  double radius() const { return radius_; }

 private:
  Vector center_;
  double radius_;
};

class Box final : public Domain {
 public:
  Box(Vector lower, Vector upper);
  std::int64_t dimension() const override { return lower_.size(); }
  void project(Vector& x) const override;
  double diameter() const override { return (upper_ - lower_).norm(); }
  double max_norm() const override;
  Vector center() const override { return (lower_ + upper_) / 2; }
  bool contains(const Vector& x, double tol = 0) const override;

 private:
  Vector lower_, upper_;
};

}  // namespace dpstats::optimize
