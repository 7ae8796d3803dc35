// Internal: what the pieces of fit_heavy_tailed share (validate.cpp, scale_step.cpp,
// clipped_gd.cpp, pop_localize.cpp, centring.cpp, held_out.cpp; the fit itself in heavy_tailed.cpp).
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_lens.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/solvers/holdout.hpp"

namespace dpstats::optimize::heavy_tailed_detail {

// The resolved moment bound and what is left for the method.
struct Scale {
  MomentBound mb;
  double epsilon = 0;  // pure methods: epsilon left for the phases
  double rho = 0;      // dp-sgd: zCDP left for the steps
  std::optional<std::string> abstained;  // the estimate has no guarantee: abstain, say why
  nlohmann::json diagnostics = nlohmann::json::object();
};

// The budget's split (public: the options and the centring's share): the moment bound's estimate
// (pure epsilon, 0 when G_k is given) and what the method gets (pure epsilon, or rho for dp-sgd).
struct MethodShares {
  double estimate = 0, epsilon = 0, rho = 0;
};

struct GdSchedule {
  int T;
  double C, eta;
};

// The one mechanism of T clipped-GD steps on m records: l2-Laplace at epsilon/T or the Gaussian
// at rho/T, on the clipped mean gradient (sensitivity: the exact sum's, over m). Built once its
// clip is known; its entry (count T) is presented before the first step draws.
struct GdMechanism {
  std::optional<GaussianMechanism> gaussian;
  std::optional<L2LaplaceMechanism> laplace;
  int steps = 0;
  LedgerEntry entry(const std::string& purpose) const {
    LedgerEntry e = gaussian ? gaussian->ledger_entry(purpose) : laplace->ledger_entry(purpose);
    e.count = steps;
    return e;
  }
  double noise_scale() const { return gaussian ? gaussian->sigma() : laplace->beta(); }
  Vector apply(const Vector& v, Rng& rng) const {
    return gaussian ? Vector(gaussian->apply(v, rng)) : Vector(laplace->apply(v, rng));
  }
};

struct GdRun {
  Vector w;
  double sensitivity = 0, scale = 0;
};

// Where this process's rows sit among all ranks' rows (options.run.comm): local row i is global
// row offset + i. One process: offset 0, the communicator is single_process().
struct Shard {
  Communicator& comm;
  std::int64_t offset = 0;
};

struct Problem {  // what every method reads
  const ConstMatrixRef& X;
  const Vector& y;
  const HeavyTailedOptions& o;
  GlmEnvelope env;
  Scale scale;
  bool noiseless = false;
  bool standardized = false;  // features centred and scaled privately (with the constant column)
  Shard shard{single_process()};
  std::int64_t n = 0;         // rows over all ranks (X holds this rank's shard)
};

struct MethodRun {
  Vector w;
  std::optional<std::string> abstained;
  nlohmann::json diagnostics = nlohmann::json::object();
};

const char* const kGdPurpose = "clipped mean gradient";

// Whether the fit centres: public values only (options, n, d, the budget). `share` is what the
// centring (or, below its threshold with an unknown scale, the offset check) may spend: pure
// epsilon, or rho for dp-sgd; 0 when neither runs.
struct CentrePlan {
  double share = 0;
  bool check = false;     // too few records to centre an unknown scale: run the offset check
  std::size_t need = 0;   // records the private centring needs (public)
  std::string why_not;
};

// The held-out records (solvers/holdout.hpp: a keyed hash of each record's values and label)
// and the others, labels as mapped for the fit.
struct HeldRows {
  bool active = false;
  RowMatrix train_X, held_X;
  Vector train_y, held_y;
};

// validate.cpp
bool final_gd(const HeavyTailedOptions& o);

// Every option, before the data's values are read or noise drawn.
void validate_options(const HeavyTailedOptions& o);

// `n`: the rows over all ranks (X holds this rank's shard, possibly empty when n >= 1).
void validate_data(const ConstMatrixRef& X, const Eigen::Ref<const Vector>& y, std::int64_t n);

// Several ranks (options.run.comm): every private method. The noisy clipped GD methods' only
// data pass is the exact clipped gradient sum. The scale step runs over ranks: the private
// moment-bound estimate (one value per record, the scale layer's exact counts), the private
// centring (private_location over every rank's rows) and the offset check (exact integer counts).
// Output perturbation and lipschitz-extension gather the rows to rank 0 (rows_on_root), which runs
// the certified ERM solver (its floating-point Newton passes do not merge exactly across ranks),
// the final block's clip quantile and the noise; the final clipped-GD phase runs over the ranks.
// Refused: the Alg 2 double output perturbation inner solver (its localisation runs two solves
// and a lens search whose diagnostics are not broadcast) and non-private (a float reference
// solve, docs/guide.md "Heavy-tailed fits on several ranks").
void check_distributed(const HeavyTailedOptions& o, int ranks);

// Everything the ranks must agree on before the first collective.
std::string fingerprint(const HeavyTailedOptions& o, Eigen::Index d);

// checked_labels over every rank's labels: {0, 1} labels are mapped when every rank's are in
// {0, 1}, some are not ±1 and some are 0 (one rank's shard alone may hold only 1s).
Vector global_labels(Communicator& comm, const Eigen::Ref<const Vector>& y, GlmKind kind,
                     bool* mapped);

// scale_step.cpp
// The held-out loss release (solvers/holdout.hpp), planned with the rest and taken from what the
// method has left: pure methods a Laplace at holdout_share x epsilon (basic composition), dp-sgd
// a Gaussian at holdout_share x rho. Non-private, or no holdout: none (the statement is exact).
std::optional<HoldoutLoss> holdout_mechanism(const HeavyTailedOptions& o);

// `centring`: what the centring spends before (pure epsilon, or rho for dp-sgd; 0 without).
MethodShares method_shares(const HeavyTailedOptions& o, double centring);

NormQuantileOptions moment_quantile_options(const HeavyTailedOptions& o, double epsilon);

// The reason the moment bound's estimate is already unusable from public values (its rank error
// at n records, public under replace-one), or nothing: the fit would abstain on the same facts
// after charging (at the centring's offset check or at the estimate), so it abstains before,
// stating the planned facts in diag["moment_bound"].
std::optional<std::string> planned_scale_abstention(const HeavyTailedOptions& o, std::int64_t n,
                                                    nlohmann::json& diag);

Scale resolve_scale(const ConstMatrixRef& X, const Vector& y, const HeavyTailedOptions& o,
                    double centring, ReleaseBudget& account, Rng& rng);

// clipped_gd.cpp
// `standardized`: the features were centred and scaled privately (the short schedule needs a
// well-conditioned problem; in the data's raw units, e.g. miles against hours, it stops far from
// the optimum, so the card's schedule stays there).
// The number of steps (public: n, d, epsilon and the options; not the moment bound).
int gd_steps(std::int64_t n, std::int64_t d, const HeavyTailedOptions& o, double epsilon,
             bool standardized);

GdSchedule gd_schedule(std::int64_t n, std::int64_t d, const HeavyTailedOptions& o,
                       const MomentBound& mb, double epsilon, bool standardized);

GdMechanism gd_mechanism(std::int64_t m, std::int64_t d, const GdSchedule& s, double epsilon,
                         double rho, bool gaussian, NoiseMode noise);

// What a plan charges for T steps before the clip is known (the same losses).
LedgerEntry gd_reserved_entry(int steps, double epsilon, double rho, bool gaussian,
                              const std::string& purpose);

// T projected steps on rows [begin, begin + m) from x0, each releasing the clipped mean gradient
// through `mech` (gd_mechanism, its entry already presented); returns the average iterate. The
// noise is drawn once, on rank 0, and every rank continues from its value.
GdRun gd_core(const ConstMatrixRef& X, const Vector& y, std::int64_t begin, std::int64_t m,
              const GlmEnvelope& env, const Vector& x0, const GdSchedule& s,
              const GdMechanism& mech, double radius, const RunControl& run, const Shard& shard,
              bool noiseless, Rng& rng);

MethodRun noisy_gd(const Problem& p, ReleaseBudget& account, Rng& rng);

// pop_localize.cpp
// Every block spends the phases' ε on its own disjoint records, so the run is ε-DP by parallel
// composition (docs/proofs/heavy-tailed.md §2): one composite, each phase's mechanisms a block.
ParallelComposite localize_composite(const HeavyTailedOptions& o, double epsilon);

MethodRun pop_localize(const Problem& q, ReleaseBudget& account, Rng& rng, HeavyTailedTrace* trace);

// centring.cpp
CentrePlan plan_centring(const ConstMatrixRef& X, std::int64_t n, const HeavyTailedOptions& o);

// What the centring (or the offset check) spends: pure epsilon, or rho for dp-sgd; 0 without.
double centring_spend(const CentrePlan& p, bool gaussian);

PrivacyLoss share_loss(double share, bool gaussian);

// Runs the private centring when it applies: fills `st` and Z = the standardised rows with the
// constant column; below its threshold runs the offset check instead. States either in `diag`
// (with "abstained" when the release must abstain), and returns what it spent.
// `n`: the records over every rank (X holds this rank's).
double centre_features(const ConstMatrixRef& X, const Vector& y, std::int64_t n,
                       const HeavyTailedOptions& o, ReleaseBudget& account, Rng& rng,
                       nlohmann::json& diag, std::optional<Standardization>& st, RowMatrix& Z);

// held_out.cpp
HeldRows hold_out_rows(const ConstMatrixRef& X, const Vector& y, const HeavyTailedOptions& o,
                       Rng& rng);

// Each held-out record's loss of the released model x . w (+ b, when centred) in the user's
// units, released by `mechanism` (non-private: the exact mean of the clipped losses).
nlohmann::json held_out_loss(const HeldRows& split, const Vector& w, const HeavyTailedOptions& o,
                             const GlmEnvelope& env, const std::optional<HoldoutLoss>& mechanism,
                             Rng& rng);

}  // namespace dpstats::optimize::heavy_tailed_detail
