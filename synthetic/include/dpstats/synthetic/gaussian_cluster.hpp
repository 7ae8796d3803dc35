// Data generators of the geometric-median experiments (the paper's §5 data: clusters, outliers).
// Generation is not a private computation: floating-point samplers, usually seeded.
#pragma once
#include <cstdint>

#include "dpstats/data/matrix.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

// GaussianCluster(R, n, d, σ, frac_in) (HSU24 App. H): n_in = floor(frac_in·n) inliers from
// N(μ, σ² I_d) with μ uniform on the sphere of radius R/2, then n − n_in outliers uniform in
// B(0, R). Rows in that order (inliers first). `centre`, when given, receives μ.
RowMatrix gaussian_cluster(double R, std::int64_t n, std::int64_t d, double sigma, double frac_in,
                           Rng& rng, Vector* centre = nullptr);

// HeavyTailed(ν, n, d): n i.i.d. multivariate Student t (identity scale, ν degrees of freedom),
// x = z / sqrt(w/ν) with z ~ N(0, I_d), w ~ χ²_ν. ||x||²/d ~ F(d, ν); the population median is 0.
RowMatrix heavy_tailed(double nu, std::int64_t n, std::int64_t d, Rng& rng);

// Gamma(shape, 1) draw (Marsaglia–Tsang), for data generation only. shape > 0.
double gamma_draw(double shape, Rng& rng);
// Uniform point on the unit sphere of R^d (g/||g||).
Vector unit_sphere_point(std::int64_t d, Rng& rng);

// Regularized incomplete beta I_x(a, b) (continued fraction), a, b > 0, x in [0, 1].
double regularized_incomplete_beta(double x, double a, double b);
// CDF of the F(d1, d2) distribution at x >= 0.
double fisher_f_cdf(double x, double d1, double d2);
// Quantile function (inverse CDF) of F(d1, d2) at p in (0, 1), by bisection to full precision.
double fisher_f_quantile(double p, double d1, double d2);

}  // namespace dpstats
