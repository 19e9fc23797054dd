#pragma once
// Gaussian process regression for the tuner: Matérn 5/2 kernel with one length scale per knob (ARD),
// signal variance and observation noise learned by maximising the log marginal likelihood (NLopt),
// and expected improvement. Inputs are model features (SearchSpace::features); a knob may own several
// features (the one-hot of a categorical) that share its length scale.
#include <Eigen/Dense>

#include <cstdint>
#include <vector>

namespace collscope::autotuner {

struct GpHyperparameters {
  std::vector<double> length_scales;  // one per knob group, in feature units (the unit cube)
  double signal_variance = 1.0;       // of the standardised objective
  double noise_variance = 1e-3;       // of the standardised objective
};

// Matérn 5/2 of the scaled distance r: (1 + √5 r + 5r²/3) exp(−√5 r).
double matern52(double r);
// Standard normal pdf / cdf.
double normal_pdf(double z);
double normal_cdf(double z);
// Expected improvement of a maximisation over `best` at a point with posterior mean mu and sd sigma
// (xi: required margin). log_expected_improvement stays finite far into the tail, where EI underflows.
double expected_improvement(double mu, double sigma, double best, double xi = 0.0);
double log_expected_improvement(double mu, double sigma, double best, double xi = 0.0);

class GaussianProcess {
 public:
  // groups[f] = index of the knob (length scale) that feature f belongs to.
  explicit GaussianProcess(std::vector<int> feature_groups);

  // Fits to observations (x: one feature row each, y: objective, larger is better). Standardises y,
  // fits hyper-parameters from `restarts` starts (the first is `warm_start` when given), seeded.
  void fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, std::uint64_t seed, int restarts = 3,
           const GpHyperparameters* warm_start = nullptr);
  // Conditions on observations with fixed hyper-parameters (no fitting): for tests and warm state.
  void condition(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const GpHyperparameters& h);

  // Posterior mean and standard deviation of the latent function, in the objective's units.
  void predict(const Eigen::VectorXd& x, double& mean, double& sd) const;
  double kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const;  // standardised units
  // Log marginal likelihood of the standardised observations under h.
  double log_marginal_likelihood(const GpHyperparameters& h) const;

  const GpHyperparameters& hyperparameters() const { return h_; }
  double log_likelihood() const { return log_likelihood_; }
  int group_count() const { return group_count_; }
  double y_mean() const { return y_mean_; }
  double y_scale() const { return y_scale_; }
  std::size_t size() const { return static_cast<std::size_t>(x_.rows()); }

 private:
  double kernel_with(const Eigen::VectorXd& a, const Eigen::VectorXd& b, const GpHyperparameters& h) const;
  void set_data(const Eigen::MatrixXd& x, const Eigen::VectorXd& y);
  void factorise();

  std::vector<int> groups_;
  int group_count_ = 0;
  GpHyperparameters h_;
  Eigen::MatrixXd x_;
  Eigen::VectorXd y_std_;  // standardised observations
  double y_mean_ = 0, y_scale_ = 1;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd alpha_;
  double log_likelihood_ = 0;
};

}  // namespace collscope::autotuner
