// Internal: what the pieces of fit_user_level share (alg1.cpp, validate.cpp, bounds.cpp,
// centring.cpp, runners.cpp; the fit itself in user_level.cpp).
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/solvers/standardize.hpp"
#include "dpstats/user_level/user_level.hpp"

namespace dpstats::optimize::user_level_detail {

struct Alg1Result {
  Vector x;
  bool halted = false;
  std::int64_t halted_phase = 0;
};

// The bounds the run uses, and what estimating or checking them cost (the scale step).
struct Bounds {
  double A = 0, B = 1;
  double rho_left = 0;  // zCDP left for the method (zcdp accountant)
  std::optional<std::string> abstained;  // an estimate has no guarantee: abstain, say why
  nlohmann::json diagnostics = nlohmann::json::object();
};

// The bounds step's plan (public: the options, and whether the data state bounds): which bounds
// are estimated, whether a supplied feature_bound is reported, their shares, and the rho left.
struct BoundsPlan {
  bool estimate_A = false, estimate_B = false, report = false;
  double eps_each = 0, eps_report = 0, rho_left = 0;
};

// What a method's run hands to seal.
struct MethodRun {
  Vector x;
  std::optional<std::string> abstained;
  bool certified = true;
};

// Whether the fit centres (public values only: options, n, d, the budget).
struct CentreDecision {
  bool centre = false;
  bool check = false;     // too few users to centre an unknown scale: run the offset check
  std::size_t need = 0;   // users the private centring needs (public)
  PrivacyLoss share = PrivacyLoss::zcdp(1);
  std::string why_not;
};

// alg1.cpp
nlohmann::json plan_json(const Alg1Plan& P);

nlohmann::json plan_json(const Alg3Plan& P);

// Alg 1's mechanisms, public given the plan: the paper's score test (Laplace(20/ε), sensitivity 2)
// and Gaussian output (σ_i, the Lemma B.2 coupling sensitivity), the practical profile's Gaussian
// at ρ on the exact sum of the displacements clipped to τ_i.
LaplaceMechanism alg1_test(double eps, NoiseMode noise);

GaussianMechanism alg1_paper_output(const Alg1Phase& ph, const UserLevelOptions& o, std::int64_t d);

GaussianMechanism alg1_practical_output(const Alg1Phase& ph, double rho, std::int64_t d,
                                        NoiseMode noise);

// `outputs`: the practical profile's phase mechanisms (alg1_practical_output), whose entries the
// release presented.
Alg1Result run_alg1(const UserDataset& data, const Loss& loss, const Domain& X, const Vector& x0,
                    const Alg1Plan& P, const std::vector<GaussianMechanism>& outputs,
                    const UserLevelOptions& o, Rng& rng, GradientCounter& counter,
                    UserLevelTrace* trace);

// validate.cpp
bool uses_label_bound(GlmKind k);

bool paper_method(const UserLevelOptions& o);

// Everything the ranks must agree on before the first collective of the fit.
std::string fingerprint(const UserDataset& data, const UserLevelOptions& o);

// checked_labels over every rank's users' labels (one process: checked_labels itself): {0, 1}
// labels are mapped when every rank's are in {0, 1}, some are not ±1 and some are 0.
Vector global_checked_labels(Communicator& comm, const Vector& y, GlmKind kind, bool* mapped);

void validate_options(const UserDataset& data, const UserLevelOptions& o);

// bounds.cpp
BoundsPlan plan_bounds(bool has_A, bool has_B, const UserLevelOptions& o, double centred_share);

// The bounds step's entries (the estimates' and the report's).
Ledger bounds_entries(const BoundsPlan& p, const UserLevelOptions& o);

// The reason the bounds' estimates are already unusable from public values (their rank error
// at the number of users, public under replace-one: the plan `b`'s shares), or nothing: the
// release would abstain on the same facts after charging, so it abstains before. States the
// estimate's planned facts in diag["bounds"][name].
std::optional<std::string> planned_bounds_abstention(const BoundsPlan& b, const UserLevelOptions& o,
                                                     std::int64_t users, nlohmann::json& diag);

// The bounds the run uses. `raw`: the users' rows as given (the clip report's); `data`: the rows
// the fit runs on (standardised when centred). `derived_A`: the bound of the standardised rows
// that a supplied feature_bound implies (Standardization::bound_of), when centred.
Bounds resolve_bounds(const UserDataset& raw, const UserDataset& data, const UserLevelOptions& o,
                      double centred_share, std::optional<double> derived_A,
                      ReleaseBudget& account, Rng& rng);

// The run's data: features clipped to A, labels to B (and mapped {0, 1} -> ±1 when needed).
UserDataset bounded_data(const UserDataset& data, const UserLevelOptions& o, const Bounds& b,
                         nlohmann::json& diag);

// runners.cpp
// The method's planned entries at `rho` (the practical profiles' zCDP; the paper's (ε, δ)).
Ledger method_planned(const UserDataset& data, const UserLevelOptions& o, double rho);

// run, part 2: the method on the bounded users (`rho`: what the scale step left), its mechanisms'
// entries claiming their planned places before they draw.
MethodRun run_method(const UserDataset& work, const UserLevelOptions& o, double rho,
                     ReleaseBudget& account, Rng& rng, nlohmann::json& diag,
                     UserLevelTrace* trace);

// centring.cpp
CentreDecision decide_centring(const UserDataset& data, const UserLevelOptions& o);

// The users' rows, each clipped to norm A (a supplied feature_bound, before centring).
UserDataset clip_rows(const UserDataset& data, double A);

// Runs the private centring when planned (fills `st` and `centred`), or states in
// diag["centring"] why not. Returns why the release abstains, if it does (only the centring was
// charged).
std::optional<std::string> centre_if_planned(const UserDataset& data, const UserLevelOptions& o,
                                           const CentreDecision& cd, ReleaseBudget& account,
                                           Rng& rng, nlohmann::json& diag,
                                           std::optional<Standardization>& st,
                                           std::optional<UserDataset>& centred);

// Below the centring threshold with an unknown scale: are the columns far from 0? (the labels
// too, for regression losses). Run after the bounds' estimates, so that a table too small for
// them abstains for that reason (the check's noise is then a large fraction of the users).
std::optional<std::string> offset_gate(const UserDataset& data, const UserLevelOptions& o,
                                       const CentreDecision& cd, ReleaseBudget& account, Rng& rng,
                                       nlohmann::json& diag);

}  // namespace dpstats::optimize::user_level_detail
