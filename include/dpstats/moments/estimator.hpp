// Continual release of weighted first and second moments (card jme-continual-moments.md):
// JME (Alg. 1), lambda-JME (Alg. 3), alpha-IME (Alg. 4), tau-CS (Alg. 5), PP and debiased PP
// (Alg. 6 with the card's three corrections), through the matrix-factorization mechanism.
//
// How the noise is drawn (secure by construction). The release is one Gaussian mechanism on the
// whole n-step stream W = [C1 X, sqrt(lambda) C2 (X•X)] (IME: two mechanisms, CS: one C on the
// concatenation): at step t the library computes row t of C·X exactly from the inputs, releases it
// through the lattice-secure GaussianMechanism (rounding to a power-of-two lattice + exact discrete
// Gaussian noise, dimension n·(d + D2) so that rounding is covered in its rho), and outputs
// B·W = A·C^{-1}·W by post-processing: v_t = (C^{-1} W)_t by forward substitution, then the
// workload recursion on v. In distribution this is A(X + C^{-1}Z) of card §1.3; the extra cost
// over drawing Z alone is keeping the input history C needs (b rows for banded:b).
//
// Neighbouring: replace-one by default (the paper's; the "free second moment" needs it), or
// add/remove (card §4.6). Norm policy: rows with ||x|| > zeta are clipped to zeta (both moments
// use the clipped row) or rejected; NaN/Inf rows always throw. How many rows were clipped is not
// public: it is counted only through the test trace hook (MomentsTrace), never in diagnostics.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "dpstats/data/matrix.hpp"
#include "dpstats/moments/factorization.hpp"
#include "dpstats/moments/sensitivity.hpp"
#include "dpstats/moments/workload.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats::moments {

enum class NormPolicy { clip, reject };

struct MomentsConfig {
  std::size_t steps = 0;  // n, the horizon (public)
  std::size_t dim = 0;    // d
  Method method = Method::jme;
  SecondMomentForm form = SecondMomentForm::full;
  Workload A1, A2;        // first- and second-moment workloads
  Factorization C1, C2;   // strategies (CS uses C1 for both; PP ignores C2)
  double zeta = 1;        // clip norm
  NormPolicy on_norm = NormPolicy::clip;
  // Budget: exactly one of (epsilon, delta), rho, noise_multiplier. delta (in (0, 1)) is always
  // needed to state an epsilon.
  std::optional<double> epsilon;
  double delta = 0;
  std::optional<double> rho;
  std::optional<double> noise_multiplier;  // sigma of a sensitivity-1 query
  std::optional<double> lambda;            // lambda-JME
  double alpha = 0.5;                      // IME
  double tau = 1;                          // CS
  Neighbouring neighbouring = Neighbouring::replace_one;
  NoiseMode noise = NoiseMode::secure;
  int threads = 1;  // noise sampling threads (GaussianMechanism::apply_each); output independent of it
};

// Builds a config from the tool's/Python's strings: workload "prefix|decay:B|window:K|average|
// adam:B", factorization "input|output|sqrt|banded:B" (applied to each workload).
MomentsConfig make_config(std::size_t steps, std::size_t dim, const std::string& method,
                          const std::string& workload, const std::string& factorization,
                          bool diagonal);

// The string-level options of `dpstats moments` and `dpstats.moments`, translated once here so
// that the tool and the Python module build identical configs.
struct MomentsOptions {
  std::size_t steps = 0, dim = 0;
  std::string method, workload = "prefix", factorization = "sqrt";
  double clip = 1;
  std::optional<double> epsilon;
  double delta = 0;
  std::optional<double> rho, noise_multiplier, lambda;
  double alpha = 0.5, tau = 1;
  bool diagonal = false;
  std::string on_norm = "clip", neighbouring = "replace-one";
  int threads = 1;
};
// Validates on_norm ("clip" | "reject") and neighbouring ("replace-one" | "add-remove").
MomentsConfig make_config(const MomentsOptions& o);

// Non-public facts, for tests only.
struct MomentsTrace {
  std::size_t clipped_rows = 0;
};

class MomentEstimator {
 public:
  // Validates everything, resolves the noise and charges the whole stream's budget up front.
  MomentEstimator(MomentsConfig config, Rng& rng);
  ~MomentEstimator();
  MomentEstimator(MomentEstimator&&) noexcept;

  // Feeds x_t (dim values); throws after `steps` pushes, on a wrong size, on NaN/Inf, and on
  // ||x|| > zeta under NormPolicy::reject (before anything is drawn).
  void push(std::span<const double> x);
  std::span<const double> first() const;   // this step's first moment (d)
  std::span<const double> second() const;  // this step's second moment (d*d row-major, or d)
  std::size_t step() const;

  const MomentsConfig& config() const;
  const NoiseScales& scales() const;       // the noise as it ran (public)
  double noise_multiplier() const;         // effective sigma (sensitivity-1 scale)
  PrivacyGuarantee privacy() const;
  const Ledger& ledger() const;
  nlohmann::json diagnostics() const;      // public values only
  void set_trace(MomentsTrace* trace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct MomentSeries {
  RowMatrix first;   // n x d
  RowMatrix second;  // n x d^2 (row-major d x d per step) or n x d
};

// Batch API: the streaming estimator run over the rows of X (n = X.rows() unless config.steps is
// set); identical bit for bit to pushing the rows with the same Rng.
Release<MomentSeries> estimate_moments(MomentsConfig config, const ConstMatrixRef& X, Rng& rng,
                                       MomentsTrace* trace = nullptr);

}  // namespace dpstats::moments
