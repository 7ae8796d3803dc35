// Joint sensitivity of the first and second moment (docs/proofs/moments.md) and the noise
// scales of every estimator, computed in one place for the estimator and the closed forms.
#pragma once
#include <cstddef>
#include <optional>

#include "dpstats/names.hpp"
#include "dpstats/privacy/privacy_loss.hpp"

namespace dpstats::moments {

enum class Method { jme, lambda_jme, ime, cs, pp, pp_debiased };
enum class SecondMomentForm { full, diagonal };

// Thin spellings of name_of / parse_enum (EnumNames below), kept for the experiments.
const char* to_string(Method m);
Method parse_method(const std::string& name);  // jme, lambda-jme, ime, cs, pp, pp-debiased
}  // namespace dpstats::moments

template <>
struct dpstats::EnumNames<dpstats::moments::Method> {
  using M = dpstats::moments::Method;
  static constexpr std::string_view parameter = "method";
  static constexpr std::array<std::pair<M, std::string_view>, 6> names = {
      {{M::jme, "jme"}, {M::lambda_jme, "lambda-jme"}, {M::ime, "ime"}, {M::cs, "cs"},
       {M::pp, "pp"}, {M::pp_debiased, "pp-debiased"}}};
};
template <>
struct dpstats::EnumNames<dpstats::moments::SecondMomentForm> {
  using F = dpstats::moments::SecondMomentForm;
  static constexpr std::string_view parameter = "second_moment";
  static constexpr std::array<std::pair<F, std::string_view>, 2> names = {
      {{F::full, "full"}, {F::diagonal, "diagonal"}}};
};

namespace dpstats::moments {

// r_d(nu) = max_{|x|,|y| <= 1} |x - y|^2 + nu |x⊗x - y⊗y|^2 (Lemma 3.5 / Thm A.1-A.2; the same for
// the diagonal x∘x, Thm 4.3). nu >= 0, d >= 1.
double rd(double nu, std::size_t d);
// c_1 = 8/(11 + 5 sqrt 5) = 10 sqrt 5 - 22, c_d = 2 for d >= 2; r_d(1/c_d) = 4 (known issue (docs/errata.md): not
// r_d(c_d)).
double cd(std::size_t d);

struct NoiseParameters {
  Method method = Method::jme;
  std::size_t d = 1;
  SecondMomentForm form = SecondMomentForm::full;
  double clip = 1;          // l2 bound of one input (JME's zeta)
  double c1_norm = 1;       // ||C1||_{1->2}
  double c2_norm = 1;       // ||C2||_{1->2} (CS and PP ignore it)
  std::optional<double> lambda;  // lambda-JME (JME uses lambda*)
  double alpha = 0.5;       // IME budget share of the first moment (rho1 = alpha rho)
  double tau = 1;           // CS scaling
  Neighbouring neighbouring = Neighbouring::replace_one;
};

// Noise of one run for noise multiplier sigma (sensitivity-1 scale).
//  s1, s2: the l2 sensitivities of the mechanisms (JME, CS, PP: one mechanism, s1 = s2 = s);
//  sigma1, sigma2: their noise multipliers (IME: sigma/sqrt(alpha), sigma/sqrt(1-alpha));
//  g1: std of each first-moment noise entry Z1 (before C1^{-1});
//  g2: std of each second-moment noise entry as it enters the second moment (JME: g/sqrt(lambda),
//      CS: g/sqrt(tau), IME: sigma2 s2; 0 for PP);
//  lambda: the JME scaling (lambda* for JME).
struct NoiseScales {
  double s1 = 0, s2 = 0, sigma1 = 0, sigma2 = 0, g1 = 0, g2 = 0, lambda = 0;
  bool two_mechanisms = false;  // IME
};
NoiseScales noise_scales(const NoiseParameters& p, double sigma);
// The second-moment input scale inside the joint mechanism: sqrt(lambda) (JME), sqrt(tau) (CS), 1.
double second_input_scale(const NoiseParameters& p, const NoiseScales& s);
// lambda* = ||C1||^2 / (c_d zeta^2 ||C2||^2): the largest lambda with the first-moment-only
// sensitivity (docs/proofs/moments.md).
double lambda_star(std::size_t d, double zeta, double c1_norm, double c2_norm);

}  // namespace dpstats::moments
