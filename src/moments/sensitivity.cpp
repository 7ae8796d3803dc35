#include "dpstats/moments/sensitivity.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"

namespace dpstats::moments {

const char* to_string(Method m) { return name_of(m).data(); }  // names are literals

Method parse_method(const std::string& name) { return parse_enum<Method>(name); }

double rd(double nu, std::size_t d) {
  require(std::isfinite(nu) && nu >= 0, fmt::format("nu must be >= 0, got {}", format_number(nu)));
  require(d >= 1, "d must be >= 1, got 0");
  if (d == 1) {
    if (nu <= (11 + 5 * std::sqrt(5.0)) / 8) return 4;
    const double tau = std::sqrt(1 - 2 / nu);
    return (3 - tau) * (3 - tau) * (nu * tau + 1 + nu) / 8;
  }
  if (nu <= 0.5) return 4;
  return 2 + 2 * nu + 1 / (2 * nu);
}

double cd(std::size_t d) {
  require(d >= 1, "d must be >= 1, got 0");
  return d == 1 ? 8 / (11 + 5 * std::sqrt(5.0)) : 2.0;
}

double lambda_star(std::size_t d, double zeta, double c1_norm, double c2_norm) {
  return c1_norm * c1_norm / (cd(d) * zeta * zeta * c2_norm * c2_norm);
}

NoiseScales noise_scales(const NoiseParameters& p, double sigma) {
  require(p.d >= 1, "dim must be >= 1, got 0");
  check_positive(p.clip, "clip");
  check_positive(p.c1_norm, "||C1||");
  check_positive(p.c2_norm, "||C2||");
  require(std::isfinite(sigma) && sigma >= 0,
          fmt::format("sigma must be >= 0, got {}", format_number(sigma)));
  const double z = p.clip, a = p.c1_norm, b = p.c2_norm;
  const bool replace = p.neighbouring == Neighbouring::replace_one;
  NoiseScales s;
  switch (p.method) {
    case Method::jme:
    case Method::lambda_jme: {
      if (p.method == Method::jme) {
        s.lambda = lambda_star(p.d, z, a, b);
      } else {
        require(p.lambda.has_value(), "lambda-jme needs lambda");
        require(std::isfinite(*p.lambda) && *p.lambda > 0,
                fmt::format("lambda must be > 0, got {}", format_number(*p.lambda)));
        s.lambda = *p.lambda;
      }
      // Replace-one: max_i zeta^2 alpha_i^2 r_d(lambda zeta^2 beta_i^2/alpha_i^2), at column 1 since
      // both C have non-increasing column norms (docs/proofs/moments.md). At lambda* this is 2 zeta a exactly.
      const double sens =
          replace ? (p.method == Method::jme
                         ? 2 * z * a
                         : z * a * std::sqrt(rd(s.lambda * z * z * b * b / (a * a), p.d)))
                  : z * std::sqrt(a * a + s.lambda * z * z * b * b);  // docs/proofs/moments.md
      s.s1 = s.s2 = sens;
      s.sigma1 = s.sigma2 = sigma;
      s.g1 = sigma * sens;
      s.g2 = s.g1 / std::sqrt(s.lambda);
      break;
    }
    case Method::ime: {
      require(std::isfinite(p.alpha) && p.alpha > 0 && p.alpha < 1,
              fmt::format("alpha must be in (0, 1), got {}", format_number(p.alpha)));
      s.two_mechanisms = true;
      s.sigma1 = sigma / std::sqrt(p.alpha);      // rho1 = alpha rho (GDP/zCDP split)
      s.sigma2 = sigma / std::sqrt(1 - p.alpha);  // rho2 = (1 - alpha) rho
      s.s1 = (replace ? 2 : 1) * z * a;
      // sup ||x⊗x - y⊗y|| = sqrt 2 zeta^2 for d >= 2 (also diagonal), zeta^2 for d = 1.
      s.s2 = (replace ? (p.d == 1 ? 1.0 : std::sqrt(2.0)) : 1.0) * z * z * b;
      s.g1 = s.sigma1 * s.s1;
      s.g2 = s.sigma2 * s.s2;
      break;
    }
    case Method::cs: {
      require(std::isfinite(p.tau) && p.tau > 0,
              fmt::format("tau must be > 0, got {}", format_number(p.tau)));
      // Alg. 5 with the ||C||_{1->2} it omits (docs/proofs/moments.md).
      s.s1 = s.s2 = (replace ? 2 : 1) * z * std::sqrt(1 + p.tau * z * z) * a;
      s.sigma1 = s.sigma2 = sigma;
      s.g1 = sigma * s.s1;
      s.g2 = s.g1 / std::sqrt(p.tau);
      s.lambda = p.tau;
      break;
    }
    case Method::pp:
    case Method::pp_debiased:
      s.s1 = s.s2 = (replace ? 2 : 1) * z * a;
      s.sigma1 = s.sigma2 = sigma;
      s.g1 = sigma * s.s1;
      s.g2 = 0;
      break;
  }
  return s;
}

double second_input_scale(const NoiseParameters& p, const NoiseScales& s) {
  switch (p.method) {
    case Method::jme:
    case Method::lambda_jme: return std::sqrt(s.lambda);
    case Method::cs: return std::sqrt(p.tau);
    default: return 1;
  }
}

}  // namespace dpstats::moments
