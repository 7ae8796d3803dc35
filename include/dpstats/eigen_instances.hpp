// Eigen templates compiled once, in src/eigen_instances.cpp, instead of in every translation unit
// that uses them (issue 30 item 1: build time). The symmetric eigensolver for Eigen::MatrixXd costs
// about 9 CPU seconds at -O3 in each of the four TUs that call it (PRIME, its primitives, the
// private filter, the moments' density); declared `extern` here, it is compiled in one.
//
// Every target's precompiled header includes this header (cmake/precompile.cmake), so no source
// file names it. A TU that does not see it (DPSTATS_PCH=OFF, a program built against the installed
// library) instantiates its own copy, which is the same code: the results are identical either way.
#pragma once

#include <Eigen/Eigenvalues>

extern template class Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>;
extern template Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>&
Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>::compute<Eigen::MatrixXd>(
    const Eigen::EigenBase<Eigen::MatrixXd>&, int);
