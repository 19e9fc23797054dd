// GP regression (Eigen) with hyper-parameters by maximum marginal likelihood (NLopt BOBYQA, multi-start).
#include <collscope/autotuner/gaussian_process.hpp>

#include <nlopt.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

namespace collscope::autotuner {

namespace {
constexpr double kSqrt5 = 2.23606797749978969641;
// Bounds of the fitted hyper-parameters, as natural logs. Length scales are in unit-cube units: below
// 0.02 the model would explain noise by wiggles, above 5 a knob stops mattering (that is allowed).
constexpr double kLogLengthMin = -3.912, kLogLengthMax = 1.609;   // 0.02 .. 5
constexpr double kLogSignalMin = -2.996, kLogSignalMax = 2.996;   // 0.05 .. 20 (standardised y)
constexpr double kLogNoiseMin = -13.8, kLogNoiseMax = -0.693;     // 1e-6 .. 0.5 (standardised y)
constexpr double kJitter = 1e-9;
}  // namespace

double matern52(double r) {
  const double s = kSqrt5 * r;
  return (1.0 + s + s * s / 3.0) * std::exp(-s);
}

double normal_pdf(double z) { return 0.39894228040143267794 * std::exp(-0.5 * z * z); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z * M_SQRT1_2); }

double expected_improvement(double mu, double sigma, double best, double xi) {
  const double d = mu - best - xi;
  if (sigma <= 0) return std::max(d, 0.0);
  const double z = d / sigma;
  return d * normal_cdf(z) + sigma * normal_pdf(z);
}

double log_expected_improvement(double mu, double sigma, double best, double xi) {
  const double d = mu - best - xi;
  if (sigma <= 0) return d > 0 ? std::log(d) : -std::numeric_limits<double>::infinity();
  const double z = d / sigma;
  if (z > -5.0) return std::log(std::max(expected_improvement(mu, sigma, best, xi), 1e-300));
  // Tail: z Φ(z) + φ(z) = φ(z) h(t), t = −z, with the asymptotic series of the Mills ratio
  // h(t) = 1/t² − 3/t⁴ + 15/t⁶ − 105/t⁸ (relative error < 1e-4 for t ≥ 5).
  const double t2 = z * z;
  const double h = (1.0 - 3.0 / t2 + 15.0 / (t2 * t2) - 105.0 / (t2 * t2 * t2)) / t2;
  return std::log(sigma) - 0.5 * z * z - 0.91893853320467274178 + std::log(h);
}

GaussianProcess::GaussianProcess(std::vector<int> feature_groups) : groups_(std::move(feature_groups)) {
  for (int g : groups_) group_count_ = std::max(group_count_, g + 1);
  h_.length_scales.assign(static_cast<std::size_t>(group_count_), 0.3);
}

double GaussianProcess::kernel_with(const Eigen::VectorXd& a, const Eigen::VectorXd& b,
                                    const GpHyperparameters& h) const {
  double r2 = 0;
  for (Eigen::Index f = 0; f < a.size(); ++f) {
    const double d = (a[f] - b[f]) / h.length_scales[static_cast<std::size_t>(groups_[static_cast<std::size_t>(f)])];
    r2 += d * d;
  }
  return h.signal_variance * matern52(std::sqrt(r2));
}

double GaussianProcess::kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const { return kernel_with(a, b, h_); }

void GaussianProcess::set_data(const Eigen::MatrixXd& x, const Eigen::VectorXd& y) {
  if (x.rows() != y.size() || x.rows() == 0) throw std::invalid_argument("GaussianProcess: need rows == observations > 0");
  if (static_cast<std::size_t>(x.cols()) != groups_.size()) throw std::invalid_argument("GaussianProcess: feature count");
  x_ = x;
  y_mean_ = y.mean();
  const double var = y.size() > 1 ? (y.array() - y_mean_).square().sum() / static_cast<double>(y.size() - 1) : 0.0;
  y_scale_ = var > 1e-24 ? std::sqrt(var) : 1.0;
  y_std_ = (y.array() - y_mean_) / y_scale_;
}

double GaussianProcess::log_marginal_likelihood(const GpHyperparameters& h) const {
  const Eigen::Index n = x_.rows();
  Eigen::MatrixXd k(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j <= i; ++j) k(i, j) = k(j, i) = kernel_with(x_.row(i).transpose(), x_.row(j).transpose(), h);
    k(i, i) += h.noise_variance + kJitter;
  }
  Eigen::LLT<Eigen::MatrixXd> llt(k);
  if (llt.info() != Eigen::Success) return -1e300;
  const Eigen::VectorXd alpha = llt.solve(y_std_);
  const double log_det_half = llt.matrixL().toDenseMatrix().diagonal().array().log().sum();
  return -0.5 * y_std_.dot(alpha) - log_det_half - 0.5 * static_cast<double>(n) * std::log(2 * M_PI);
}

void GaussianProcess::factorise() {
  const Eigen::Index n = x_.rows();
  Eigen::MatrixXd k(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j <= i; ++j) k(i, j) = k(j, i) = kernel(x_.row(i).transpose(), x_.row(j).transpose());
    k(i, i) += h_.noise_variance + kJitter;
  }
  llt_.compute(k);
  alpha_ = llt_.solve(y_std_);
  log_likelihood_ = log_marginal_likelihood(h_);
}

void GaussianProcess::condition(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const GpHyperparameters& h) {
  set_data(x, y);
  h_ = h;
  factorise();
}

namespace {
struct FitContext {
  const GaussianProcess* gp;
  int groups;
};

GpHyperparameters unpack(const double* p, int groups) {
  GpHyperparameters h;
  for (int g = 0; g < groups; ++g) h.length_scales.push_back(std::exp(p[g]));
  h.signal_variance = std::exp(p[groups]);
  h.noise_variance = std::exp(p[groups + 1]);
  return h;
}

double negative_lml(unsigned n, const double* p, double* grad, void* data) {
  (void)n;
  (void)grad;  // derivative-free (BOBYQA)
  const auto* ctx = static_cast<const FitContext*>(data);
  const double lml = ctx->gp->log_marginal_likelihood(unpack(p, ctx->groups));
  return std::isfinite(lml) ? -lml : 1e300;
}
}  // namespace

void GaussianProcess::fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, std::uint64_t seed, int restarts,
                          const GpHyperparameters* warm_start) {
  set_data(x, y);
  const int dims = group_count_ + 2;
  std::vector<double> lower(static_cast<std::size_t>(dims)), upper(static_cast<std::size_t>(dims));
  for (int g = 0; g < group_count_; ++g) {
    lower[static_cast<std::size_t>(g)] = kLogLengthMin;
    upper[static_cast<std::size_t>(g)] = kLogLengthMax;
  }
  lower[static_cast<std::size_t>(group_count_)] = kLogSignalMin;
  upper[static_cast<std::size_t>(group_count_)] = kLogSignalMax;
  lower[static_cast<std::size_t>(group_count_ + 1)] = kLogNoiseMin;
  upper[static_cast<std::size_t>(group_count_ + 1)] = kLogNoiseMax;

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  FitContext ctx{this, group_count_};
  double best_value = std::numeric_limits<double>::infinity();
  std::vector<double> best_point;
  for (int start = 0; start < std::max(1, restarts); ++start) {
    std::vector<double> p(static_cast<std::size_t>(dims));
    if (start == 0) {
      // A neutral start: length 0.3 of the cube, unit signal, small noise; or the previous fit.
      const GpHyperparameters h0 = warm_start && warm_start->length_scales.size() == static_cast<std::size_t>(group_count_)
                                       ? *warm_start
                                       : GpHyperparameters{std::vector<double>(static_cast<std::size_t>(group_count_), 0.3), 1.0, 1e-2};
      for (int g = 0; g < group_count_; ++g) p[static_cast<std::size_t>(g)] = std::log(h0.length_scales[static_cast<std::size_t>(g)]);
      p[static_cast<std::size_t>(group_count_)] = std::log(h0.signal_variance);
      p[static_cast<std::size_t>(group_count_ + 1)] = std::log(h0.noise_variance);
    } else {
      for (int d = 0; d < dims; ++d)
        p[static_cast<std::size_t>(d)] = lower[static_cast<std::size_t>(d)] +
                                         unit(rng) * (upper[static_cast<std::size_t>(d)] - lower[static_cast<std::size_t>(d)]);
    }
    for (int d = 0; d < dims; ++d)
      p[static_cast<std::size_t>(d)] = std::clamp(p[static_cast<std::size_t>(d)], lower[static_cast<std::size_t>(d)], upper[static_cast<std::size_t>(d)]);
    nlopt_opt opt = nlopt_create(NLOPT_LN_BOBYQA, static_cast<unsigned>(dims));
    nlopt_set_lower_bounds(opt, lower.data());
    nlopt_set_upper_bounds(opt, upper.data());
    nlopt_set_min_objective(opt, negative_lml, &ctx);
    nlopt_set_maxeval(opt, 60 * dims);
    nlopt_set_xtol_rel(opt, 1e-4);
    double value = 0;
    nlopt_optimize(opt, p.data(), &value);  // any stop reason leaves the best point found in p
    nlopt_destroy(opt);
    value = negative_lml(static_cast<unsigned>(dims), p.data(), nullptr, &ctx);
    if (value < best_value) {
      best_value = value;
      best_point = p;
    }
  }
  h_ = unpack(best_point.data(), group_count_);
  factorise();
}

void GaussianProcess::predict(const Eigen::VectorXd& x, double& mean, double& sd) const {
  const Eigen::Index n = x_.rows();
  Eigen::VectorXd k_star(n);
  for (Eigen::Index i = 0; i < n; ++i) k_star[i] = kernel(x, x_.row(i).transpose());
  const double mean_std = k_star.dot(alpha_);
  const Eigen::VectorXd v = llt_.matrixL().solve(k_star);
  const double var_std = std::max(h_.signal_variance - v.squaredNorm(), 1e-12);
  mean = y_mean_ + y_scale_ * mean_std;
  sd = y_scale_ * std::sqrt(var_std);
}

}  // namespace collscope::autotuner
