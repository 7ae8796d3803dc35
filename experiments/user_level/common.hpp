// Shared pieces of the user-level experiments (study.cpp, default_rule.cpp): the methods'
// candidate utility parameters (chosen on tuning data only) and small summaries.
#pragma once
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "dpstats/synthetic/synthetic_users.hpp"
#include "dpstats/user_level/user_level.hpp"

namespace dpstats::repro::user_level {

using namespace dpstats::optimize;

struct Config {
  std::string name;        // method label in the tables
  UserLevelOptions opt;
};

struct Size {
  std::int64_t n, m;
};

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Test risk on a fixed honest test set, in one pass over its rows.
inline double test_risk(const UserDataset& test, const Loss& loss, const Vector& x) {
  return empirical_risk(test, loss, x);
}

inline UserTask task_for(const Size& s, std::int64_t d, std::int64_t adversaries = 0) {
  UserTask t;
  t.n = s.n;
  t.m = s.m;
  t.d = d;
  t.adversaries = adversaries;
  return t;
}

// Candidate configurations per method (utility-only parameters; chosen on tuning data).
inline std::vector<Config> candidates(const Size& s, const std::string& method, bool quick = false) {
  std::vector<Config> out;
  const double L = 1.5;  // feature bound A = 1.5 for the logistic task
  const double rootm = std::sqrt(static_cast<double>(s.m));
  auto base = [&](UserLevelMethod m) {
    UserLevelOptions o;
    o.privacy = {1, 1e-6};
    o.method = m;
    o.domain_radius = 5;
    o.privacy.epsilon = 1;
    o.privacy.delta = 1e-6;
    return o;
  };
  if (method == "dp-gd-user") {
    for (double c : {0.25, 0.5, 1.0, 2.0})
      for (int T : {10, 20, 40})
        for (double eta : {8.0, 32.0, 128.0}) {
          auto o = base(UserLevelMethod::dp_gd_user);
          o.clip = c * L / rootm;
          o.steps = T;
          o.step_size = eta / (L * L / 4);
          out.push_back({method, o});
        }
  } else if (method == "dp-sgd-user") {
    for (double c : {0.25, 0.5, 1.0, 2.0})
      for (int T : {5, 10, 20})
        for (double eta : {1.0, 8.0, 32.0}) {
          auto o = base(UserLevelMethod::dp_sgd_user);
          o.clip = c * L / rootm;
          o.steps = T;
          o.step_size = eta / (L * L / 4);
          out.push_back({method, o});
        }
  } else if (method == "dp-sgd-group") {
    for (double c : {0.05, 0.25, 1.0})
      for (int T : {5, 20})
        for (double eta : {1.0, 8.0, 32.0}) {
          auto o = base(UserLevelMethod::dp_sgd_group);
          o.clip = c * L;
          o.steps = T;
          o.step_size = eta / (L * L / 4);
          out.push_back({method, o});
        }
  } else if (method == "phased-sgd") {
    for (double eta_mult : {1.0, 10.0, 100.0})
      for (double c_tau : {1.0, 0.3, 0.1}) {
        auto o = base(UserLevelMethod::phased_sgd);
        o.alg1.p = 1.0;
        o.alg1.c_tau = c_tau;
        o.alg1.eta = eta_mult * 5.0 * 2 /
                     (L * std::sqrt(10.0 * static_cast<double>(s.m) * static_cast<double>(s.n)));
        out.push_back({method, o});
      }
  } else if (method == "accelerated" || method == "nonsmooth") {
    // Alg 3 practical: clip τ, T steps, AC-SA's L_f as a multiple of its default τ·T²/(8R).
    // (--quick: T in {10, 20}, L_f multiple in {0.25, 1}; the full run adds T = 40 and 4.)
    for (double c : {0.25, 0.5, 1.0})
      for (int T : {10, 20, 40})
        for (double mult : {0.25, 1.0, 4.0}) {
          if (quick && (T == 40 || mult == 4.0)) continue;
          auto o = base(method == "accelerated" ? UserLevelMethod::accelerated
                                                : UserLevelMethod::nonsmooth);
          o.clip = c * L / rootm;
          o.steps = T;
          o.alg3.smoothness = mult * *o.clip * T * T / (8 * 10.0);
          out.push_back({method, o});
        }
  } else if (method == "non-private") {
    out.push_back({method, base(UserLevelMethod::non_private)});
  }
  return out;
}

struct Summary {
  double mean = 0, se = 0;
};
inline Summary summarise(const std::vector<double>& v) {
  Summary s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  if (v.size() > 1) s.se = std::sqrt(var / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
  return s;
}


}  // namespace dpstats::repro::user_level
