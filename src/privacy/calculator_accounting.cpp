// `account dp-sgd` and `account compose --loss ...`: the PLD and RDP accountants behind the
// calculator (include/dpstats/privacy/calculator.hpp; proofs in docs/proofs/accounting.md).
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

#include "dpstats/error.hpp"
#include "dpstats/names.hpp"
#include "dpstats/privacy/calculator.hpp"
#include "dpstats/privacy/pld.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/privacy/rdp.hpp"

namespace dpstats {
namespace {

// The kinds of a `--loss` item (docs/guide.md "account compose").
enum class LossItemKind { pure, approx, zcdp, gdp, gaussian, laplace, subsampled_gaussian };

}  // namespace

template <>
struct EnumNames<LossItemKind> {
  static constexpr std::string_view parameter = "loss kind";
  static constexpr std::array<std::pair<LossItemKind, std::string_view>, 7> names = {{
      {LossItemKind::pure, "pure"},
      {LossItemKind::approx, "approx"},
      {LossItemKind::zcdp, "zcdp"},
      {LossItemKind::gdp, "gdp"},
      {LossItemKind::gaussian, "gaussian"},
      {LossItemKind::laplace, "laplace"},
      {LossItemKind::subsampled_gaussian, "subsampled-gaussian"},
  }};
};

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The kind of a `--loss` item ("pure" of "pure:1"), parsed once.
LossItemKind loss_kind(const std::string& kind, const std::string& item) {
  try {
    return parse_enum<LossItemKind>(kind);
  } catch (const InvalidArgument&) {
    throw InvalidArgument(fmt::format(
        "loss '{}': kind must be pure, approx, zcdp, gdp, gaussian, laplace or "
        "subsampled-gaussian, got '{}'", item, kind));
  }
}

// pure, approx, zcdp and gdp take their values by position; the others by key.
bool takes_value(LossItemKind k) {
  return k == LossItemKind::pure || k == LossItemKind::approx || k == LossItemKind::zcdp ||
         k == LossItemKind::gdp;
}

// One parsed `--loss` item: a ledger loss (for both accountants), or a Laplace mechanism (exact
// PLD; pure epsilon = sensitivity / scale for RDP), repeated `times` times.
struct Item {
  std::string text;
  PrivacyLoss loss;
  bool laplace = false;
  double scale = 0, sensitivity = 1;
  long long times = 1;
};

double parse_number(const std::string& item, const std::string& key, const std::string& v) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used == v.size() && !v.empty(),
          fmt::format("loss '{}': {} must be a number, got '{}'", item, key, v));
  return x;
}

// "kind:a,b,key=value,..." -> kind, positional values, keyed values.
void split_item(const std::string& s, std::string& kind, std::vector<std::string>& pos,
                std::map<std::string, std::string>& keyed) {
  const auto colon = s.find(':');
  require(colon != std::string::npos && colon > 0,
          fmt::format("loss '{}': expected KIND:VALUES, e.g. pure:1 or gaussian:sigma=2", s));
  kind = s.substr(0, colon);
  std::string rest = s.substr(colon + 1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string part = rest.substr(start, comma == std::string::npos ? std::string::npos
                                                                           : comma - start);
    const auto eq = part.find('=');
    if (eq == std::string::npos) {
      require(keyed.empty(), fmt::format("loss '{}': positional values come first", s));
      pos.push_back(part);
    } else {
      keyed[part.substr(0, eq)] = part.substr(eq + 1);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

Item parse_item(const std::string& s) {
  std::string kind;
  std::vector<std::string> pos;
  std::map<std::string, std::string> kv;
  split_item(s, kind, pos, kv);
  Item it;
  it.text = s;
  auto take = [&](const std::string& key, std::optional<double> fallback) -> double {
    auto f = kv.find(key);
    if (f == kv.end()) {
      require(fallback.has_value(), fmt::format("loss '{}': {}= is required", s, key));
      return *fallback;
    }
    const double x = parse_number(s, key, f->second);
    kv.erase(f);
    return x;
  };
  auto positional = [&](std::size_t n) {
    require(pos.size() == n, fmt::format("loss '{}': {} takes {} value(s), got {}", s, kind, n,
                                         pos.size()));
  };
  const LossItemKind head = loss_kind(kind, s);
  positional(head == LossItemKind::approx ? 2 : takes_value(head) ? 1 : 0);
  const double a = takes_value(head) ? parse_number(s, "value", pos[0]) : 0;
  switch (head) {
    case LossItemKind::pure: it.loss = PrivacyLoss::pure(a); break;
    case LossItemKind::approx:
      it.loss = PrivacyLoss::approximate(a, parse_number(s, "delta", pos[1]));
      break;
    case LossItemKind::zcdp: it.loss = PrivacyLoss::zcdp(a); break;
    case LossItemKind::gdp: it.loss = PrivacyLoss::gdp(a); break;
    case LossItemKind::gaussian: {
      const double sigma = take("sigma", std::nullopt), sens = take("sensitivity", 1.0);
      check_positive(sigma, "sigma");
      check_positive(sens, "sensitivity");
      it.loss = PrivacyLoss::gdp(sens / sigma);
      break;
    }
    case LossItemKind::laplace:
      it.laplace = true;
      it.scale = take("scale", std::nullopt);
      it.sensitivity = take("sensitivity", 1.0);
      check_positive(it.scale, "scale");
      check_positive(it.sensitivity, "sensitivity");
      it.loss = PrivacyLoss::pure(it.sensitivity / it.scale);
      break;
    case LossItemKind::subsampled_gaussian: {
      const double q = take("q", std::nullopt), sigma = take("sigma", std::nullopt);
      it.loss = PrivacyLoss::subsampled_gaussian(q, sigma);
      it.times = static_cast<long long>(take("steps", 1.0));
      break;
    }
  }
  const double times = take("times", 1.0);
  require(times >= 1 && times == std::floor(times) && times <= 1e9,
          fmt::format("loss '{}': times must be an integer in [1, 1e9], got {}", s, times));
  it.times *= static_cast<long long>(times);
  require(it.times >= 1 && it.times <= 1'000'000'000,
          fmt::format("loss '{}': steps x times must be in [1, 1e9], got {}", s, it.times));
  require(kv.empty(), fmt::format("loss '{}': unknown key '{}'", s, kv.empty() ? "" : kv.begin()->first));
  return it;
}

// PLD epsilon of the items at delta; nullopt (with a reason) when an item has no PLD.
std::optional<double> pld_epsilon(const std::vector<Item>& items, double delta, std::string& why) {
  PrivacyLossDistribution total;
  try {
    for (const Item& it : items) {
      const PrivacyLossDistribution one =
          it.laplace ? PrivacyLossDistribution::from_mechanism(PldMechanism::laplace, it.scale,
                                                               it.sensitivity)
                     : PrivacyLossDistribution::from_loss(it.loss);
      total = total.compose(it.times == 1 ? one : one.self_compose(it.times));
    }
  } catch (const InvalidArgument& e) {
    why = e.what();
    return std::nullopt;
  }
  return total.epsilon_for_delta(delta);
}

// RDP epsilon (and order) of the items at delta (approximate items' deltas subtracted first).
std::optional<RdpEpsilon> rdp_epsilon(const std::vector<Item>& items, double delta,
                                      std::string& why) {
  const std::vector<double> orders = accounting_rdp_orders();
  std::vector<double> curve(orders.size(), 0.0);
  double spent_delta = 0;
  try {
    for (const Item& it : items) {
      for (std::size_t i = 0; i < orders.size(); ++i)
        curve[i] += static_cast<double>(it.times) * loss_rdp(it.loss, orders[i]);
      spent_delta += static_cast<double>(it.times) * it.loss.delta;
    }
  } catch (const InvalidArgument& e) {
    why = e.what();
    return std::nullopt;
  }
  if (spent_delta * (1 + 1e-12) >= delta) {
    why = fmt::format("the losses' deltas add up to {} >= delta = {}", spent_delta, delta);
    return std::nullopt;
  }
  return rdp_to_epsilon(orders, curve, (delta - spent_delta) * (1 - 1e-12));
}

// Both accountants' answers and the tighter one, into `out`.
void pick(nlohmann::json& out, std::optional<double> pld, std::optional<RdpEpsilon> rdp,
          CalculatorAccountant accountant, const std::string& pld_why, const std::string& rdp_why) {
  out["pld"] = pld ? nlohmann::json{{"epsilon", *pld}} : nlohmann::json{{"refused", pld_why}};
  out["rdp"] = rdp ? nlohmann::json{{"epsilon", rdp->epsilon}, {"order", rdp->order}}
                   : nlohmann::json{{"refused", rdp_why}};
  const bool use_pld = pld &&
                       (accountant == CalculatorAccountant::pld || !rdp || *pld <= rdp->epsilon) &&
                       accountant != CalculatorAccountant::rdp;
  require(use_pld || rdp, fmt::format("no accountant can count these losses: {}",
                                      accountant == CalculatorAccountant::rdp ? rdp_why : pld_why));
  out["epsilon"] = use_pld ? *pld : rdp->epsilon;
  out["accountant"] = use_pld ? "pld" : "rdp";
  out["upper_bound"] = true;
}

double dp_sgd_epsilon(double q, double z, long long steps, double delta, CalculatorAccountant acc,
                      nlohmann::json* out) {
  using enum CalculatorAccountant;
  const std::vector<Item> items{
      Item{"", PrivacyLoss::subsampled_gaussian(q, z), false, 0, 1, steps}};
  std::string pw, rw;
  const auto pld_eps = acc == rdp ? std::nullopt : pld_epsilon(items, delta, pw);
  const auto rdp_eps = acc == pld ? std::nullopt : rdp_epsilon(items, delta, rw);
  if (acc == rdp) pw = "not asked for";
  if (acc == pld) rw = "not asked for";
  nlohmann::json j;
  pick(j, pld_eps, rdp_eps, acc, pw, rw);
  if (out) *out = j;
  return j["epsilon"].get<double>();
}

}  // namespace

nlohmann::json account_dp_sgd(double q, std::optional<double> noise_multiplier,
                              std::optional<double> epsilon, long long steps, double delta,
                              CalculatorAccountant accountant) {
  require(std::isfinite(q) && q > 0 && q <= 1,
          fmt::format("sampling-rate must be in (0, 1], got {}", q));
  require(steps >= 1 && steps <= 1'000'000'000,
          fmt::format("steps must be in [1, 1e9], got {}", steps));
  check_delta_positive(delta, "delta");
  require(noise_multiplier.has_value() != epsilon.has_value(),
          "give exactly one of noise-multiplier (-> epsilon) and epsilon (-> noise multiplier)");
  if (noise_multiplier) check_positive(*noise_multiplier, "noise-multiplier");
  if (epsilon) check_epsilon(*epsilon, "epsilon");
  double z = noise_multiplier.value_or(0);
  if (epsilon) {
    // Bisection on z: epsilon(z) is nonincreasing in z for both accountants. The RDP account
    // alone (cheap) brackets from above when it is part of the answer.
    auto eps_at = [&](double x) { return dp_sgd_epsilon(q, x, steps, delta, accountant, nullptr); };
    const auto coarse = accountant == CalculatorAccountant::pld ? CalculatorAccountant::pld
                                                                : CalculatorAccountant::rdp;
    auto coarse_at = [&](double x) { return dp_sgd_epsilon(q, x, steps, delta, coarse, nullptr); };
    double hi = 1;
    while (coarse_at(hi) > *epsilon) {
      hi *= 2;
      require(hi <= 1e4, fmt::format("no noise multiplier <= 1e4 reaches epsilon = {} at delta = "
                                     "{} (q = {}, {} steps)", *epsilon, delta, q, steps));
    }
    double lo = hi / 2;
    while (lo > 1e-2 && coarse_at(lo) <= *epsilon) lo /= 2, hi = lo * 2;
    while (hi - lo > 1e-3 * hi) (coarse_at(0.5 * (lo + hi)) <= *epsilon ? hi : lo) = 0.5 * (lo + hi);
    lo = 0.7 * hi;
    while (lo > 1e-2 && eps_at(lo) <= *epsilon) hi = lo, lo *= 0.7;
    while (hi - lo > 1e-6 * hi) {  // eps_at(lo) > target >= eps_at(hi)
      const double mid = 0.5 * (lo + hi);
      (eps_at(mid) <= *epsilon ? hi : lo) = mid;
    }
    z = hi;
  }
  nlohmann::json out;
  dp_sgd_epsilon(q, z, steps, delta, accountant, &out);
  out["noise_multiplier"] = z;
  if (epsilon) out["target_epsilon"] = *epsilon;
  out["sampling_rate"] = q;
  out["steps"] = steps;
  out["delta"] = delta;
  out["sampling"] = "poisson";
  out["neighbouring"] = "add-remove";
  return out;
}

nlohmann::json account_compose_losses(const std::vector<std::string>& losses, double delta,
                                      CalculatorAccountant accountant) {
  check_delta_positive(delta, "delta");
  require(!losses.empty(), "losses: give at least one loss");
  std::vector<Item> items;
  nlohmann::json listed = nlohmann::json::array();
  for (const auto& s : losses) {
    items.push_back(parse_item(s));
    listed.push_back({{"loss", s}, {"times", items.back().times}});
  }
  std::string pw = "not asked for", rw = "not asked for";
  using enum CalculatorAccountant;
  const auto pld_eps = accountant == rdp ? std::nullopt : pld_epsilon(items, delta, pw);
  const auto rdp_eps = accountant == pld ? std::nullopt : rdp_epsilon(items, delta, rw);
  nlohmann::json out;
  pick(out, pld_eps, rdp_eps, accountant, pw, rw);
  out["delta"] = delta;
  out["losses"] = listed;
  if (out["epsilon"].get<double>() == kInf) out["epsilon"] = nullptr;
  return out;
}

}  // namespace dpstats
