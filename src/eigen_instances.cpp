// The one copy of the Eigen templates that dpstats/eigen_instances.hpp declares `extern`.
#include "dpstats/eigen_instances.hpp"

template class Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>;
template Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>&
Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>::compute<Eigen::MatrixXd>(
    const Eigen::EigenBase<Eigen::MatrixXd>&, int);
